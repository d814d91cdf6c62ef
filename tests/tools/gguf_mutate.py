#!/usr/bin/env python3
"""Writes a copy of a GGUF file with one thing changed, for the tests that
check tokscope refuses what it does not understand:

  gguf_mutate.py IN OUT --set-str KEY VALUE   set a string key (added if absent)
  gguf_mutate.py IN OUT --set-u32 KEY VALUE   set a uint32 key (added if absent)
  gguf_mutate.py IN OUT --drop-tensor NAME    leave a tensor out
  gguf_mutate.py IN OUT --add-tensor NAME     add an F32 vector tensor of 32 zeros
  gguf_mutate.py IN OUT --drop-key KEY        leave a key out

The tensor data is copied unchanged (offsets rewritten); the output is a
valid GGUF v3 file."""
import struct
import sys

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


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    src, dst, op, arg = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    data = open(src, 'rb').read()
    r = Reader(data)
    if r.raw(4) != b'GGUF':
        sys.exit('not a GGUF file')
    version, n_t, n_kv = r.take('I'), r.take('Q'), r.take('Q')
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
    align = 32
    for k, t, v in kvs:
        if k == b'general.alignment':
            align = struct.unpack('<I', v)[0]
    data_start = (r.o + align - 1) // align * align
    # sizes from the offsets (the last runs to the end of the file)
    order = sorted(range(len(tensors)), key=lambda i: tensors[i][3])
    blobs = {}
    for j, i in enumerate(order):
        a = data_start + tensors[i][3]
        b = data_start + tensors[order[j + 1]][3] if j + 1 < len(order) else len(data)
        blobs[i] = data[a:b]
    blobs = [blobs[i] for i in range(len(tensors))]

    key = arg.encode()
    if op == '--set-str':
        val = gstr(sys.argv[5].encode())
        kvs = [(k, t, v) for k, t, v in kvs if k != key]
        kvs.insert(0, (key, 8, val))
    elif op == '--set-u32':
        kvs = [(k, t, v) for k, t, v in kvs if k != key]
        kvs.append((key, 4, struct.pack('<I', int(sys.argv[5]))))
    elif op == '--drop-key':
        kvs = [(k, t, v) for k, t, v in kvs if k != key]
    elif op == '--drop-tensor':
        keep = [i for i, tt in enumerate(tensors) if tt[0] != key]
        if len(keep) == len(tensors):
            sys.exit('no tensor %s' % arg)
        tensors = [tensors[i] for i in keep]
        blobs = [blobs[i] for i in keep]
    elif op == '--add-tensor':
        tensors.append([key, [32], 0, 0])
        blobs.append(b'\0' * 128)
    else:
        sys.exit(__doc__)

    out = bytearray(b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack('<I', t) + v
    off = 0
    offsets = []
    for b in blobs:
        offsets.append(off)
        off += (len(b) + align - 1) // align * align
    for (name, ne, tt, _), o in zip(tensors, offsets):
        out += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', n) for n in ne)
        out += struct.pack('<IQ', tt, o)
    out += b'\0' * ((-len(out)) % align)
    for b in blobs:
        out += b + b'\0' * ((-len(b)) % align)
    open(dst, 'wb').write(out)


main()
