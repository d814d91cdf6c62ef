#!/usr/bin/env python3
"""Checks of README.md and docs/*.md (tests/golden/docs.sh): python3 stdlib.

  doc_check.py links FILE...      every relative link's file exists and its
                                  #anchor is a heading there (GitHub's slugs)
  doc_check.py indexed README DOCDIR
                                  every DOCDIR/*.md is linked from README
  doc_check.py archrows TABLE ARCHDIR
                                  every architecture of ARCHDIR/arch_*.c has
                                  its row ("| `name` |") in TABLE

Each prints one line per problem on stdout and exits 1 when there is any."""
import glob
import os
import re
import sys

LINK = re.compile(r'\]\(([^)\s]+)\)')


def strip_code(text):
    """The text outside fenced code blocks (links there are not links)."""
    out, fence = [], False
    for line in text.split('\n'):
        if line.startswith('```'):
            fence = not fence
            out.append('')
            continue
        out.append('' if fence else line)
    return out


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    other than '-' and '_' dropped, spaces to '-'."""
    h = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading.strip()).lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')


def anchors(path):
    seen, out = {}, set()
    for line in strip_code(open(path, encoding='utf-8').read()):
        m = re.match(r'^#{1,6} +(.*?) *#*$', line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else '%s-%d' % (s, n))
    return out


def links(files):
    bad = []
    for f in files:
        for no, line in enumerate(strip_code(open(f, encoding='utf-8').read()), 1):
            for target in LINK.findall(line):
                if re.match(r'^[a-z]+:', target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                if not os.path.exists(dest):
                    bad.append('%s:%d: %s: no such file' % (f, no, target))
                    continue
                if anchor:
                    if not dest.endswith('.md'):
                        bad.append('%s:%d: %s: an anchor into a file that is not Markdown' % (f, no, target))
                    elif anchor not in anchors(dest):
                        bad.append('%s:%d: %s: no heading with that anchor in %s' % (f, no, target, dest))
    return bad


def indexed(readme, docdir):
    text = '\n'.join(strip_code(open(readme, encoding='utf-8').read()))
    targets = {os.path.normpath(os.path.join(os.path.dirname(readme), t.partition('#')[0]))
               for t in LINK.findall(text)}
    return ['%s: not linked from %s' % (d, readme)
            for d in sorted(glob.glob(os.path.join(docdir, '*.md'))) if os.path.normpath(d) not in targets]


def archrows(table, archdir):
    text = open(table, encoding='utf-8').read()
    bad = []
    for src in sorted(glob.glob(os.path.join(archdir, 'arch_*.c'))):
        m = re.search(r'const arch_def \w+ = \{\s*\w+,\s*"([^"]+)"', open(src, encoding='utf-8').read())
        if not m:
            continue  # shared rules (arch_moe.c), no architecture of its own
        if '| `%s` |' % m.group(1) not in text:
            bad.append('%s: no row for %s (%s)' % (table, m.group(1), src))
    return bad


def main(argv):
    cmd, args = argv[1], argv[2:]
    bad = {'links': lambda: links(args), 'indexed': lambda: indexed(*args),
           'archrows': lambda: archrows(*args)}[cmd]()
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
