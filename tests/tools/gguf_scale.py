#!/usr/bin/env python3
"""Writes a copy of an F32 GGUF model whose blocks from FROM on write FACTOR
times their output into the residual (attn_output and ffn_down scaled), for
the speculative decoding tests: the file cut to its first FROM blocks
(gguf_cut.py) then drafts for it and mostly agrees (x0.008 after 2 blocks:
~70 % on a random TinyLlama shape, the issue's pair):

  gguf_scale.py IN OUT FROM FACTOR

Only F32 weights are scaled (refused otherwise); everything else is copied
byte for byte."""
import array
import re
import struct
import sys

from gguf_cut import Reader  # the same GGUF reader, in the same folder


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    src, dst, first, factor = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    data = bytearray(open(src, 'rb').read())
    r = Reader(data)
    if data[:4] != b'GGUF':
        sys.exit('%s: not a GGUF file' % src)
    r.o = 4
    _, n_t, n_kv = r.take('I'), r.take('Q'), r.take('Q')
    align = 32
    for _ in range(n_kv):
        k = r.string()
        t = r.take('I')
        at = r.o
        r.value(t)
        if k == b'general.alignment':
            align = struct.unpack_from('<I', data, at)[0]
    tensors = []
    for _ in range(n_t):
        name = r.string()
        nd = r.take('I')
        ne = [r.take('Q') for _ in range(nd)]
        tensors.append((name, ne, r.take('I'), r.take('Q')))
    base = (r.o + align - 1) // align * align
    blk = re.compile(rb'^blk\.(\d+)\.(attn_output|ffn_down)\.weight$')
    n_scaled = 0
    for name, ne, tt, off in tensors:
        mt = blk.match(name)
        if not mt or int(mt.group(1)) < first:
            continue
        if tt != 0:
            sys.exit('%s: type %d, only F32 is scaled' % (name.decode(), tt))
        n = 1
        for x in ne:
            n *= x
        a = array.array('f')
        a.frombytes(bytes(data[base + off:base + off + 4 * n]))
        for i in range(n):
            a[i] *= factor
        data[base + off:base + off + 4 * n] = a.tobytes()
        n_scaled += 1
    if not n_scaled:
        sys.exit('no block from %d on' % first)
    open(dst, 'wb').write(data)


if __name__ == '__main__':
    main()
