#!/usr/bin/env python3
"""Writes a toy gemma4-assistant GGUF (llama.cpp 34af94cd's
src/models/gemma4-assistant.cpp: the separate drafting file of a Gemma 4
target, run with --spec mtp --draft-model FILE / --spec-type draft-mtp -md
FILE) that fits the gemma4 target TARGET, for the speculative decoding
tests: no such file is committed.

  gguf_g4assist.py [--unit] TARGET OUT [FACTOR]

The assistant has n_embd A = 2 B (B: the target's embedding_length, its
embedding_length_out) and two blocks, a sliding one then a full one, of the
target's last sliding and full head sizes and KV heads (their queries read
the target's cache of its last layer of that kind; 2 query heads each), an
FFN of width A. Its input is nextn.pre_projection . [target embedding *
sqrt(B) ; target hidden state] (F32, 2B -> A): the identity, so the
residual starts as the concatenation itself. Its head is its own
token_embd (Q8_0, A wide): each row the target's row (the same Q8_0
blocks) then zeros, so it scores tokens as the target's tied head does its
current token's embedding; output_norm is the target's twice.
nextn.post_projection (F32, A -> B) hands the first half of the normed
residual on as the next hidden state. The blocks' weights are random
(Q8_0, seeded: the same bytes every run) and their post-attention and
post-FFN norms FACTOR (default 0.7): each block adds a little to the
residual, so the drafts follow the target's embedding path (a useful
acceptance on random weights) while every tensor counts.

--unit: the blocks' post norms are 0, so each block adds exactly nothing,
and the head's second half is the target's rows shifted by one token
(token t gets row t + 1), so the hidden-state half of the input counts:
tests/unit/test_spec_g4assist.c works the drafts out by hand from the
weights.

Keys: what the reference's converter (conversion/gemma.py,
Gemma4AssistantModel) writes that its loader reads, the target's
tokenizer, and attention.shared_kv_layers and final_logit_softcapping,
which the converter writes and the reference's assistant ignores."""
import random
import struct
import sys

from gguf_cut import BLOCK, SCALAR, gstr, read_gguf, write_gguf

F32, Q8_0 = 0, 8
U32, F32K, BOOL, STR, ARR = 4, 6, 7, 8, 9


def q8_0(vals):
    """Q8_0 blocks of vals (a multiple of 32): scale amax / 127, values rounded."""
    out = bytearray()
    for b in range(0, len(vals), 32):
        blk = vals[b:b + 32]
        amax = max(abs(v) for v in blk)
        d = amax / 127.0
        idv = 1.0 / d if d else 0.0
        out += struct.pack('<e', d)
        out += struct.pack('<32b', *(max(-127, min(127, int(round(v * idv)))) for v in blk))
    return bytes(out)


def f32(vals):
    return struct.pack('<%df' % len(vals), *vals)


def main():
    args = sys.argv[1:]
    unit = False
    if args and args[0] == '--unit':
        unit = True
        args.pop(0)
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    src, dst = args[0], args[1]
    factor = float(args[2]) if len(args) == 3 else 0.7
    data, kvs, tensors, align, arch, data_start = read_gguf(src)
    if arch != b'gemma4':
        sys.exit('%s: architecture %s, not gemma4' % (src, arch))

    def raw(key):
        for k, t, v in kvs:
            if k == b'gemma4.' + key:
                return t, v
        sys.exit('%s: gemma4.%s is missing' % (src, key.decode()))

    def scalar(key):
        t, v = raw(key)
        return struct.unpack('<' + SCALAR[t], v)[0]

    B = scalar(b'embedding_length')
    n_layer = scalar(b'block_count')
    t, v = raw(b'attention.sliding_window_pattern')
    swa = list(v[12:12 + n_layer])
    if not (swa[n_layer - 2] and not swa[n_layer - 1]):
        sys.exit('%s: the last two layers are not sliding, full' % src)
    if raw(b'attention.head_count_kv')[0] != U32:
        sys.exit('%s: per-layer head_count_kv is not handled' % src)
    n_kv = scalar(b'attention.head_count_kv')
    hd_full, hd_swa = scalar(b'attention.key_length'), scalar(b'attention.key_length_swa')

    tinfo = {t[0]: t for t in tensors}

    def blob(name):
        _, ne, tt, off = tinfo[name]
        n = 1
        for x in ne:
            n *= x
        bn, bb = BLOCK[tt]
        return data[data_start + off:data_start + off + n // bn * bb], ne, tt

    emb, ne, tt = blob(b'token_embd.weight')
    if tt != Q8_0 or ne[0] != B:
        sys.exit('%s: token_embd.weight is not Q8_0 of width %d' % (src, B))
    V = ne[1]
    row = B // 32 * 34
    A, F, n_head = 2 * B, 2 * B, 2
    zero_row = (struct.pack('<e', 0.0) + bytes(32)) * (B // 32)
    head = bytearray()
    for tok in range(V):
        head += emb[tok * row:(tok + 1) * row]
        head += emb[(tok + 1) % V * row:((tok + 1) % V + 1) * row] if unit else zero_row
    out_norm = struct.unpack('<%df' % B, blob(b'output_norm.weight')[0])

    rng = random.Random(20260512)

    def rand(n, scale):
        return [rng.gauss(0.0, scale) for _ in range(n)]

    out_t, out_b = [], []

    def add(name, ne, tt, b):
        out_t.append((name, ne, tt))
        out_b.append(b)

    add(b'token_embd.weight', [A, V], Q8_0, bytes(head))
    add(b'rope_freqs.weight', [hd_full // 2], F32, blob(b'rope_freqs.weight')[0])
    pre = [0.0] * (2 * B * A)
    for i in range(A):
        pre[i * 2 * B + i] = 1.0  # cur[i] = [x ; h][i]
    add(b'nextn.pre_projection.weight', [2 * B, A], F32, f32(pre))
    post = [0.0] * (A * B)
    for i in range(B):
        post[i * A + i] = 1.0  # h_next[i] = normed[i]
    add(b'nextn.post_projection.weight', [A, B], F32, f32(post))
    pn = 0.0 if unit else factor
    for il, hd in enumerate((hd_swa, hd_full)):
        p = b'blk.%d.' % il
        add(p + b'attn_norm.weight', [A], F32, f32([1.0 + x for x in rand(A, 0.1)]))
        add(p + b'attn_q.weight', [A, n_head * hd], Q8_0, q8_0(rand(A * n_head * hd, A ** -0.5)))
        add(p + b'attn_q_norm.weight', [hd], F32, f32([1.0 + x for x in rand(hd, 0.1)]))
        add(p + b'attn_output.weight', [n_head * hd, A], Q8_0, q8_0(rand(n_head * hd * A, (n_head * hd) ** -0.5)))
        add(p + b'post_attention_norm.weight', [A], F32, f32([pn] * A))
        add(p + b'layer_output_scale.weight', [1], F32, f32([1.0]))
        add(p + b'ffn_norm.weight', [A], F32, f32([1.0 + x for x in rand(A, 0.1)]))
        add(p + b'ffn_gate.weight', [A, F], Q8_0, q8_0(rand(A * F, A ** -0.5)))
        add(p + b'ffn_up.weight', [A, F], Q8_0, q8_0(rand(A * F, A ** -0.5)))
        add(p + b'ffn_down.weight', [F, A], Q8_0, q8_0(rand(F * A, F ** -0.5)))
        add(p + b'post_ffw_norm.weight', [A], F32, f32([pn] * A))
    add(b'output_norm.weight', [A], F32, f32(list(out_norm) * 2))

    g = b'gemma4-assistant.'

    def u32(k, x):
        return (g + k, U32, struct.pack('<I', x))

    def f32k(k, x):
        return (g + k, F32K, struct.pack('<f', x))

    out_kvs = [
        (b'general.architecture', STR, gstr(b'gemma4-assistant')),
        (b'general.name', STR, gstr(b'gemma4-assistant-toy')),
        (b'general.file_type', U32, struct.pack('<I', 7)),
        u32(b'context_length', scalar(b'context_length')),
        u32(b'embedding_length', A),
        u32(b'embedding_length_out', B),
        u32(b'block_count', 2),
        u32(b'nextn_predict_layers', 2),
        u32(b'feed_forward_length', F),
        u32(b'attention.head_count', n_head),
        u32(b'attention.head_count_kv', n_kv),
        f32k(b'rope.freq_base', scalar(b'rope.freq_base')),
        f32k(b'attention.layer_norm_rms_epsilon', scalar(b'attention.layer_norm_rms_epsilon')),
        u32(b'rope.dimension_count', scalar(b'rope.dimension_count')),
        u32(b'attention.key_length', hd_full),
        u32(b'attention.value_length', hd_full),
        u32(b'attention.sliding_window', scalar(b'attention.sliding_window')),
        f32k(b'rope.freq_base_swa', scalar(b'rope.freq_base_swa')),
        (g + b'attention.sliding_window_pattern', ARR, struct.pack('<IQ', BOOL, 2) + b'\x01\x00'),
        u32(b'attention.key_length_swa', hd_swa),
        u32(b'attention.value_length_swa', hd_swa),
        u32(b'rope.dimension_count_swa', scalar(b'rope.dimension_count_swa')),
        u32(b'attention.shared_kv_layers', 2),
        f32k(b'final_logit_softcapping', scalar(b'final_logit_softcapping')),
    ]
    out_kvs += [(k, t, v) for k, t, v in kvs if k.startswith(b'tokenizer.')]
    write_gguf(dst, out_kvs, out_t, out_b, align)


if __name__ == '__main__':
    main()
