#!/usr/bin/env python3
"""Write a tiny llama-architecture GGUF model for llama.cpp's server: its own small vocabulary,
random weights from a fixed seed (the same file every time), and a generation that never
ends by itself, so a request's length is its n_predict / max_tokens.

Usage (python3-gguf, Debian unstable's: the sid root of tests/lib/rootfs.sh):
  make_model.py OUT.gguf [--seed N]

The vocabulary is SentencePiece-shaped (tokenizer "llama"): <unk>, <s>, </s>, the 256 byte
tokens (so that any prompt tokenizes, the chat template's markup included), then single
characters and whole words, all ASCII. Random weights would pick byte tokens now and then,
and a lone byte of a UTF-8 sequence is held back by the server, not streamed; </s> would end
the stream. So no step may pick either: embedding dimension 0 is a constant large against the
rest, which makes it dominate the final RMS norm (its normed value is ~sqrt(n_embd) for every
input), and the output rows of those tokens are strongly negative there. Every streamed token
is then one of the words or characters, one SSE event each.

Its size (384 wide, 4 layers, 29 MB of float32, under a second to write) makes a token take
~2 ms on one thread here: a stream paced as a real one, not one burst the client reads at once.
"""
import argparse

import numpy as np
import gguf

WORDS = ("the of and to in is was for on that with as by at from it this be are an or "
         "token stream server model fast slow time first last next wait send read byte "
         "light river stone cloud green blue red quiet loud small large early late north "
         "south east west seven eight nine ten hello world").split()
CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,!?")

N_EMBD, N_HEAD, N_FF, N_LAYER, N_CTX = 384, 6, 1024, 4, 1024


def vocab():
    toks = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    scores = [0.0] * len(toks)
    for c in CHARS + ["\u2581"]:
        toks.append(c.encode())
        types.append(gguf.TokenType.NORMAL)
        scores.append(-10.0)
    for w in WORDS:
        toks.append(("\u2581" + w).encode())	# SentencePiece's space mark
        types.append(gguf.TokenType.NORMAL)
        scores.append(-1.0)
    return toks, types, scores


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=33)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    toks, types, scores = vocab()
    n_vocab = len(toks)
    banned = [i for i, t in enumerate(types) if t != gguf.TokenType.NORMAL]

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("tokentrace-tiny")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                        "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")

    def t(name, *shape, scale=0.02):
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    emb = (rng.standard_normal((n_vocab, N_EMBD)) * 0.1).astype(np.float32)
    emb[:, 0] = 1.0
    w.add_tensor("token_embd.weight", emb)
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, np.float32))
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t(p + n + ".weight", N_EMBD, N_EMBD)
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, np.float32))
        t(p + "ffn_gate.weight", N_FF, N_EMBD)
        t(p + "ffn_up.weight", N_FF, N_EMBD)
        t(p + "ffn_down.weight", N_EMBD, N_FF)
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, np.float32))
    # small enough that the logits of the words stay close: a varied stream, seeded
    out = (rng.standard_normal((n_vocab, N_EMBD)) * 0.1).astype(np.float32)
    out[:, 0] = 0.0
    out[banned, 0] = -20.0
    w.add_tensor("output.weight", out)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
