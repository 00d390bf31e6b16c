/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Function symbols of an ELF file, read with libelf: by name (to place uprobes on function
 * starts, never elsewhere) and by address (to name the frames of a stack). Both .symtab and
 * .dynsym are read; a stripped file keeps only its dynamic symbols.
 */
#ifndef TT_ELFSYM_H
#define TT_ELFSYM_H

#include <stdbool.h>
#include <stdint.h>

struct elf_syms;

/* 0, or -errno: -ENOENT no such file, -ENOEXEC not an ELF file. */
int elf_syms__open(const char *path, struct elf_syms **out);
void elf_syms__close(struct elf_syms *s);

/* No .symtab: only exported (dynamic) symbols are known. */
bool elf_syms__stripped(const struct elf_syms *s);
/* ET_DYN: a PIE or a shared object, loaded at a base address. */
bool elf_syms__relocatable(const struct elf_syms *s);

/* A function symbol by exact name: its address (st_value) and size. -ENOENT if none. */
int elf_syms__find(const struct elf_syms *s, const char *name, uint64_t *addr, uint64_t *size);
/* Is addr where a function symbol starts? */
bool elf_syms__is_func_start(const struct elf_syms *s, uint64_t addr);
/* The function containing addr, and addr's offset in it; NULL if none. */
const char *elf_syms__lookup(const struct elf_syms *s, uint64_t addr, uint64_t *off);

/* Link-time address <-> file offset, through the PT_LOAD segments. -ENOENT if unmapped. */
int elf_syms__addr_to_off(const struct elf_syms *s, uint64_t addr, uint64_t *off);
int elf_syms__off_to_addr(const struct elf_syms *s, uint64_t off, uint64_t *addr);

/* Does the file have the USDT probe provider:name (a .note.stapsdt entry)? */
bool elf_syms__has_usdt(const struct elf_syms *s, const char *provider, const char *name);

#endif /* TT_ELFSYM_H */
