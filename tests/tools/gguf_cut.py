#!/usr/bin/env python3
"""Writes a copy of a GGUF model cut to its first N blocks, for the logit
lens tests (tokscope logits --lens-layer N must give what this file gives):

  gguf_cut.py IN OUT N

Leaves out every tensor blk.I.* with I >= N, sets ARCH.block_count to N and
cuts every per-block array key of the architecture (ARCH.*, one entry per
block, such as a sliding-window pattern) to N entries. The 2026 families
need more: gemma4's shared-KV layers are the last ones, so
ARCH.attention.shared_kv_layers drops by the blocks cut (to 0 at least) and
the layers kept read the same caches; its per-layer embeddings hold one
slice of ARCH.embedding_length_per_layer_input values per block, so
per_layer_token_embd keeps the first N slices of each row and
per_layer_model_proj the first N slices of rows (whole quant blocks only);
gemma4's rope_freqs serves only its global blocks, and the reference
refuses a file with a tensor it does not load, so it goes where every block
kept is a sliding-window one; ARCH.nextn_predict_layers (MTP blocks, the last ones, never run) becomes 0.
qwen35's DeltaNet/attention layout (full_attention_interval) and gpt-oss's
alternating window are rules over the block index, unchanged. Everything else
(other keys, the tensors kept, their order, types and bytes) is copied
unchanged; the output is a valid GGUF v3 file and always the same bytes
for the same input."""
import re
import struct
import sys

# ggml type: (values per block, bytes per block), to cut rows at whole blocks
BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
         10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
         15: (256, 292), 30: (1, 2), 39: (32, 17)}
SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}


class Reader:
    def __init__(self, data):
        self.d, self.o = data, 0

    def take(self, fmt):
        v = struct.unpack_from('<' + fmt, self.d, self.o)
        self.o += struct.calcsize('<' + fmt)
        return v[0]

    def raw(self, n):
        v = self.d[self.o:self.o + n]
        self.o += n
        return v

    def string(self):
        return self.raw(self.take('Q'))

    def value(self, t):
        """The value's bytes as stored (without its type)."""
        start = self.o
        if t == 8:
            self.string()
        elif t == 9:
            at, n = self.take('I'), self.take('Q')
            for _ in range(n):
                self.value(at)
        else:
            self.take(SCALAR[t])
        return self.d[start:self.o]


def gstr(b):
    return struct.pack('<Q', len(b)) + b


def read_gguf(src):
    """(data, kvs, tensors, align, arch, data_start) of a GGUF file: kvs as (key, type, raw value bytes),
    tensors as [name, ne, type, offset]; exits on a file without the magic."""
    data = open(src, 'rb').read()
    r = Reader(data)
    if r.raw(4) != b'GGUF':
        sys.exit('%s: not a GGUF file' % src)
    _, n_t, n_kv = r.take('I'), r.take('Q'), r.take('Q')
    kvs = []
    for _ in range(n_kv):
        k = r.string()
        t = r.take('I')
        kvs.append((k, t, r.value(t)))
    tensors = []
    for _ in range(n_t):
        name = r.string()
        nd = r.take('I')
        ne = [r.take('Q') for _ in range(nd)]
        tt, off = r.take('I'), r.take('Q')
        tensors.append([name, ne, tt, off])
    align, arch = 32, None
    for k, t, v in kvs:
        if k == b'general.alignment':
            align = struct.unpack('<I', v)[0]
        if k == b'general.architecture':
            arch = bytes(v[8:])
    return data, kvs, tensors, align, arch, (r.o + align - 1) // align * align


def write_gguf(dst, kvs, tensors, blobs, align):
    """A GGUF v3 file of these kvs and tensors ((name, ne, type, ...)), each blob aligned."""
    out = bytearray(b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack('<I', t) + v
    off, offsets = 0, []
    for b in blobs:
        offsets.append(off)
        off += (len(b) + align - 1) // align * align
    for (name, ne, tt, *_), o in zip(tensors, offsets):
        out += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', n) for n in ne)
        out += struct.pack('<IQ', tt, o)
    out += b'\0' * ((-len(out)) % align)
    for b in blobs:
        out += b + b'\0' * ((-len(b)) % align)
    open(dst, 'wb').write(out)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst, n_keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data, kvs, tensors, align, arch, data_start = read_gguf(src)
    if arch is None:
        sys.exit('%s: no general.architecture' % src)
    count_key = arch + b'.block_count'
    n_layer = None
    for k, t, v in kvs:
        if k == count_key:
            n_layer = struct.unpack('<' + SCALAR[t], v)[0]
    if n_layer is None:
        sys.exit('%s: no %s' % (src, count_key.decode()))
    if not 1 <= n_keep <= n_layer:
        sys.exit('N must be 1..%d' % n_layer)
    # sizes from the offsets (the last runs to the end of the file)
    order = sorted(range(len(tensors)), key=lambda i: tensors[i][3])
    blobs = {}
    for j, i in enumerate(order):
        a = data_start + tensors[i][3]
        b = data_start + tensors[order[j + 1]][3] if j + 1 < len(order) else len(data)
        blobs[i] = data[a:b]
    def scalar(key):
        for k, t, v in kvs:
            if k == arch + b'.' + key:
                return struct.unpack('<' + SCALAR[t], v)[0]
        return None

    nextn = scalar(b'nextn_predict_layers') or 0
    if n_keep > n_layer - nextn:
        sys.exit('N must be 1..%d: the last %d blocks are MTP layers' % (n_layer - nextn, nextn))
    per_layer = scalar(b'embedding_length_per_layer_input') or 0
    if per_layer:
        for i, (name, ne, tt, _) in enumerate(tensors):
            # the per-layer embeddings: one slice of per_layer values per block
            dim = {b'per_layer_token_embd.weight': 0, b'per_layer_model_proj.weight': 1}.get(name)
            if dim is None:
                continue
            if tt not in BLOCK or ne[dim] != per_layer * n_layer:
                sys.exit('%s: type %d or shape %s not cut' % (name.decode(), tt, ne))
            bn, bb = BLOCK[tt]
            row = ne[0] // bn * bb
            if dim == 0:
                if per_layer * n_keep % bn:
                    sys.exit('%s: %d values a row is no whole %d-value block' % (name.decode(), per_layer * n_keep, bn))
                keep_b = per_layer * n_keep // bn * bb
                n_rows = 1
                for n in ne[1:]:
                    n_rows *= n
                blobs[i] = b''.join(blobs[i][r * row:r * row + keep_b] for r in range(n_rows))
            else:
                blobs[i] = blobs[i][:row * per_layer * n_keep]
            ne[dim] = per_layer * n_keep

    pattern = [k for k in kvs if k[0] == arch + b'.attention.sliding_window_pattern']
    if arch == b'gemma4' and pattern and pattern[0][1] == 9:
        swa = pattern[0][2][12:12 + n_keep]
        if len(swa) == n_keep and all(swa):
            gone = [i for i, tt in enumerate(tensors) if tt[0] == b'rope_freqs.weight']
            tensors = [tt for i, tt in enumerate(tensors) if i not in gone]
            blobs = [b for i, b in sorted(blobs.items()) if i not in gone]
            blobs = dict(enumerate(blobs))

    blk = re.compile(rb'^blk\.(\d+)\.')
    keep = [i for i, tt in enumerate(tensors) if not (blk.match(tt[0]) and int(blk.match(tt[0]).group(1)) >= n_keep)]
    tensors = [tensors[i] for i in keep]
    blobs = [blobs[i] for i in keep]

    out_kvs = []
    for k, t, v in kvs:
        if k == count_key:
            v = struct.pack('<' + SCALAR[t], n_keep)
        elif k == arch + b'.attention.shared_kv_layers':
            v = struct.pack('<' + SCALAR[t], max(0, struct.unpack('<' + SCALAR[t], v)[0] - (n_layer - n_keep)))
        elif k == arch + b'.nextn_predict_layers':
            v = struct.pack('<' + SCALAR[t], 0)
        elif t == 9 and k.startswith(arch + b'.'):
            at, n = struct.unpack_from('<IQ', v)
            if n == n_layer and at in SCALAR:
                size = struct.calcsize('<' + SCALAR[at])
                v = struct.pack('<IQ', at, n_keep) + v[12:12 + n_keep * size]
        out_kvs.append((k, t, v))

    write_gguf(dst, out_kvs, tensors, blobs, align)


if __name__ == '__main__':
    main()
