#!/usr/bin/env python3
"""Writes a copy of a qwen35 or qwen35moe GGUF with one MTP block (the
reference's nextn_predict_layers, what --spec mtp / --spec-type draft-mtp
run), for the speculative decoding tests: no model file with one is
committed.

  gguf_mtp.py [--h-half|--both] [--shift-embed] IN OUT [FROM FACTOR]

The block (blk.N, N = IN's block_count, which becomes N + 1 with
nextn_predict_layers 1) is a copy of IN's last full-attention block (its
norms, attention and FFN or experts, same types and bytes) with
nextn.eh_proj (F32, 2n_embd -> n_embd: the identity on the embedding half,
so the block starts from the token's normed embedding), nextn.enorm and
nextn.hnorm (F32 ones); its embeddings, head and head norm are the
trunk's (the optional nextn.* ones are not written). --h-half: eh_proj
is the identity on the hidden-state half instead, so the block starts from
the normed hidden state it is given; --both: the sum of the two halves;
--shift-embed: the block has embeddings of its own (nextn.embed_tokens),
the trunk's rows shifted by one (token t gets row t + 1). With FACTOR 0
tests/unit/test_spec_mtp.c works the drafts out by hand.

With FROM FACTOR the blocks from FROM on, the MTP block included, write
FACTOR times their output into the residual (attn_output, ssm_out and the
FFN's down projections scaled, as gguf_scale.py does for F32 files; Q8_0
blocks by their scale): a random model whose later blocks barely count
predicts from the current token's embedding much as its MTP block does,
so drafts get accepted (a useful acceptance on random weights).

Everything else is copied byte for byte; the output is always the same
bytes for the same input."""
import re
import struct
import sys

from gguf_cut import BLOCK, SCALAR, read_gguf, write_gguf

F32, F16, Q8_0 = 0, 1, 8
SCALED = re.compile(rb'^blk\.(\d+)\.(attn_output|ssm_out|ffn_down|ffn_down_exps|ffn_down_shexp)\.weight$')


def scale(blob, tt, n, factor):
    """blob's first n values times factor (F32: each; F16: each, rounded; Q8_0: each block's scale)."""
    b = bytearray(blob)
    if tt == F32:
        for i in range(n):
            struct.pack_into('<f', b, 4 * i, struct.unpack_from('<f', b, 4 * i)[0] * factor)
    elif tt == F16:
        for i in range(n):
            struct.pack_into('<e', b, 2 * i, struct.unpack_from('<e', b, 2 * i)[0] * factor)
    elif tt == Q8_0:
        for blk in range(n // 32):
            struct.pack_into('<e', b, 34 * blk, struct.unpack_from('<e', b, 34 * blk)[0] * factor)
    else:
        sys.exit('type %d is not scaled (F32, F16 or Q8_0)' % tt)
    return bytes(b)


def main():
    args = sys.argv[1:]
    flags = set()
    while args and args[0] in ('--h-half', '--both', '--shift-embed'):
        flags.add(args.pop(0))
    h_half, both = '--h-half' in flags, '--both' in flags
    if len(args) not in (2, 4):
        sys.exit(__doc__)
    src, dst = args[0], args[1]
    first, factor = (int(args[2]), float(args[3])) if len(args) == 4 else (None, 1.0)
    data, kvs, tensors, align, arch, data_start = read_gguf(src)
    if arch not in (b'qwen35', b'qwen35moe'):
        sys.exit('%s: architecture %s, not qwen35 or qwen35moe' % (src, arch))

    def scalar(key, default=None):
        for k, t, v in kvs:
            if k == arch + b'.' + key:
                return struct.unpack('<' + SCALAR[t], v)[0]
        return default

    n_layer, n_embd = scalar(b'block_count'), scalar(b'embedding_length')
    if scalar(b'nextn_predict_layers', 0):
        sys.exit('%s: has MTP blocks already' % src)
    if any(k == arch + b'.attention.recurrent_layers' for k, _, _ in kvs):
        sys.exit('%s: attention.recurrent_layers is not handled (full_attention_interval only)' % src)
    interval = scalar(b'full_attention_interval', 4)
    attn = [il for il in range(n_layer) if (il + 1) % interval == 0]
    if not attn:
        sys.exit('%s: no full-attention block to copy' % src)
    donor = attn[-1]

    blobs = []
    for name, ne, tt, off in tensors:
        n = 1
        for x in ne:
            n *= x
        bn, bb = BLOCK[tt]
        blobs.append(data[data_start + off:data_start + off + n // bn * bb])

    prefix = b'blk.%d.' % donor
    out_t, out_b = [], []
    for (name, ne, tt, _), b in zip(tensors, blobs):
        out_t.append((name, ne, tt))
        out_b.append(b)
    for (name, ne, tt, _), b in zip(tensors, blobs):
        if name.startswith(prefix):
            out_t.append((b'blk.%d.' % n_layer + name[len(prefix):], ne, tt))
            out_b.append(b)
    eh = bytearray(4 * 2 * n_embd * n_embd)
    for row in range(n_embd):
        if not h_half:
            struct.pack_into('<f', eh, 4 * (row * 2 * n_embd + row), 1.0)
        if h_half or both:
            struct.pack_into('<f', eh, 4 * (row * 2 * n_embd + n_embd + row), 1.0)
    ones = struct.pack('<f', 1.0) * n_embd
    out_t += [(b'blk.%d.nextn.eh_proj.weight' % n_layer, [2 * n_embd, n_embd], F32),
              (b'blk.%d.nextn.enorm.weight' % n_layer, [n_embd], F32),
              (b'blk.%d.nextn.hnorm.weight' % n_layer, [n_embd], F32)]
    out_b += [bytes(eh), ones, ones]
    if '--shift-embed' in flags:
        i = [t[0] for t in tensors].index(b'token_embd.weight')
        name, ne, tt, _ = tensors[i]
        bn, bb = BLOCK[tt]
        row = ne[0] // bn * bb
        emb = blobs[i]
        out_t.append((b'blk.%d.nextn.embed_tokens.weight' % n_layer, ne, tt))
        out_b.append(emb[row:] + emb[:row])
    if first is not None:
        for i, (name, ne, tt) in enumerate(out_t):
            m = SCALED.match(name)
            if m and int(m.group(1)) >= first:
                n = 1
                for x in ne:
                    n *= x
                out_b[i] = scale(out_b[i], tt, n, factor)

    out_kvs = []
    for k, t, v in kvs:
        if k == arch + b'.block_count':
            v = struct.pack('<' + SCALAR[t], n_layer + 1)
        out_kvs.append((k, t, v))
    out_kvs.append((arch + b'.nextn_predict_layers', 4, struct.pack('<I', 1)))

    write_gguf(dst, out_kvs, out_t, out_b, align)


if __name__ == '__main__':
    main()
