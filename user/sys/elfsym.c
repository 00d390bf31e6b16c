// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfsym.h"
#include "vec.h"

#define USDT_NOTE_TYPE	3	/* NT_STAPSDT */
#define SEGS_MAX	16

struct sym {
	uint64_t addr;
	uint64_t size;
	const char *name;	/* in names */
};

struct usdt {
	const char *provider;
	const char *name;
};

struct seg {
	uint64_t vaddr, memsz, off;
};

struct elf_syms {
	struct sym *syms;	/* sorted by addr */
	size_t nsyms;
	char *names;
	size_t names_len, names_cap;
	struct usdt *usdts;
	size_t nusdts;
	struct seg segs[SEGS_MAX];
	int nsegs;
	bool stripped;
	bool dyn;
};

/*
 * Names are copied into one growing pool and referenced by offset until the file is read
 * (the pool moves as it grows); finish_names() turns offsets into pointers.
 */
static int keep_name(struct elf_syms *s, const char *name, const char **ref)
{
	size_t n = strlen(name) + 1;

	if (VEC_RESERVE(s->names, &s->names_cap, s->names_len + n, SIZE_MAX))
		return -ENOMEM;
	memcpy(s->names + s->names_len, name, n);
	*ref = (const char *)(uintptr_t)s->names_len;
	s->names_len += n;
	return 0;
}

static int add_sym(struct elf_syms *s, size_t *cap, uint64_t addr, uint64_t size,
		   const char *name)
{
	if (VEC_RESERVE(s->syms, cap, s->nsyms + 1, SIZE_MAX))
		return -ENOMEM;
	if (keep_name(s, name, &s->syms[s->nsyms].name))
		return -ENOMEM;
	s->syms[s->nsyms].addr = addr;
	s->syms[s->nsyms].size = size;
	s->nsyms++;
	return 0;
}

static int read_symtab(struct elf_syms *s, Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_value ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (add_sym(s, cap, sym.st_value, sym.st_size, name))
			return -ENOMEM;
	}
	return 0;
}

/* .note.stapsdt: desc = pc, base, semaphore (address-sized), then provider\0 name\0 args\0 */
static int read_usdt_notes(struct elf_syms *s, Elf *elf, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off, cap = 0;
	size_t asz = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	GElf_Nhdr nh;

	if (!data)
		return 0;
	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off;
		const char *prov, *name;
		size_t len = nh.n_descsz;

		if (nh.n_type != USDT_NOTE_TYPE || len < 3 * asz + 2)
			continue;
		prov = desc + 3 * asz;
		if (!memchr(prov, 0, len - 3 * asz))
			continue;
		name = prov + strlen(prov) + 1;
		if (name >= desc + len || !memchr(name, 0, desc + len - name))
			continue;
		if (VEC_RESERVE(s->usdts, &cap, s->nusdts + 1, SIZE_MAX))
			return -ENOMEM;
		if (keep_name(s, prov, &s->usdts[s->nusdts].provider) ||
		    keep_name(s, name, &s->usdts[s->nusdts].name))
			return -ENOMEM;
		s->nusdts++;
	}
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Offsets into names become pointers once names stops moving. */
static void finish_names(struct elf_syms *s)
{
	for (size_t i = 0; i < s->nsyms; i++)
		s->syms[i].name = s->names + (uintptr_t)s->syms[i].name;
	for (size_t i = 0; i < s->nusdts; i++) {
		s->usdts[i].provider = s->names + (uintptr_t)s->usdts[i].provider;
		s->usdts[i].name = s->names + (uintptr_t)s->usdts[i].name;
	}
}

int elf_syms__open(const char *path, struct elf_syms **out)
{
	struct elf_syms *s;
	size_t cap = 0, phnum, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	int fd, err = 0;
	bool have_symtab = false;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	s->dyn = eh.e_type == ET_DYN;
	if (!elf_getphdrnum(elf, &phnum)) {
		for (size_t i = 0; i < phnum && s->nsegs < SEGS_MAX; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
				continue;
			s->segs[s->nsegs++] = (struct seg){ ph.p_vaddr, ph.p_memsz, ph.p_offset };
		}
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			have_symtab |= sh.sh_type == SHT_SYMTAB;
			err = read_symtab(s, elf, scn, &sh, &cap);
		} else if (sh.sh_type == SHT_NOTE && shstrndx) {
			sname = elf_strptr(elf, shstrndx, sh.sh_name);
			if (sname && !strcmp(sname, ".note.stapsdt"))
				err = read_usdt_notes(s, elf, scn);
		}
		if (err)
			break;
	}
	if (!err) {
		s->stripped = !have_symtab;
		finish_names(s);
		qsort(s->syms, s->nsyms, sizeof(*s->syms), cmp_sym);
		*out = s;
		s = NULL;
	}
out:
	elf_syms__close(s);
	elf_end(elf);
	close(fd);
	return err;
}

void elf_syms__close(struct elf_syms *s)
{
	if (!s)
		return;
	free(s->syms);
	free(s->names);
	free(s->usdts);
	free(s);
}

bool elf_syms__stripped(const struct elf_syms *s)
{
	return s->stripped;
}

bool elf_syms__relocatable(const struct elf_syms *s)
{
	return s->dyn;
}

int elf_syms__find(const struct elf_syms *s, const char *name, uint64_t *addr, uint64_t *size)
{
	for (size_t i = 0; i < s->nsyms; i++) {
		if (strcmp(s->syms[i].name, name))
			continue;
		*addr = s->syms[i].addr;
		*size = s->syms[i].size;
		return 0;
	}
	return -ENOENT;
}

/* index of the last symbol starting at or below addr, or -1 */
static long floor_idx(const struct elf_syms *s, uint64_t addr)
{
	long lo = 0, hi = (long)s->nsyms - 1, best = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (s->syms[mid].addr <= addr) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

bool elf_syms__is_func_start(const struct elf_syms *s, uint64_t addr)
{
	long i = floor_idx(s, addr);

	return i >= 0 && s->syms[i].addr == addr;
}

const char *elf_syms__lookup(const struct elf_syms *s, uint64_t addr, uint64_t *off)
{
	long i = floor_idx(s, addr);

	if (i < 0)
		return NULL;
	/* a symbol without a size covers up to the next one; one with a size, only itself */
	if (s->syms[i].size && addr >= s->syms[i].addr + s->syms[i].size)
		return NULL;
	*off = addr - s->syms[i].addr;
	return s->syms[i].name;
}

int elf_syms__addr_to_off(const struct elf_syms *s, uint64_t addr, uint64_t *off)
{
	for (int i = 0; i < s->nsegs; i++) {
		if (addr >= s->segs[i].vaddr && addr < s->segs[i].vaddr + s->segs[i].memsz) {
			*off = addr - s->segs[i].vaddr + s->segs[i].off;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_syms__off_to_addr(const struct elf_syms *s, uint64_t off, uint64_t *addr)
{
	for (int i = 0; i < s->nsegs; i++) {
		if (off >= s->segs[i].off && off < s->segs[i].off + s->segs[i].memsz) {
			*addr = off - s->segs[i].off + s->segs[i].vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

bool elf_syms__has_usdt(const struct elf_syms *s, const char *provider, const char *name)
{
	for (size_t i = 0; i < s->nusdts; i++)
		if (!strcmp(s->usdts[i].provider, provider) && !strcmp(s->usdts[i].name, name))
			return true;
	return false;
}
