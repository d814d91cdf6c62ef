#!/bin/sh
# make install / make uninstall into temporary DESTDIRs: what lands where
# (binary, gzip man page, example config in the doc directory and, when
# absent, in PREFIX/etc), that the installed binary runs, and that uninstall
# removes exactly what install added: the tree is as before, a system config
# that existed or that the user changed stays, other files stay.
. tests/lib.sh
BUILD=${BUILD:-build}
W=$(mktemp -d "$OUT/install.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
MK="make -s --no-print-directory BUILD=$BUILD BIN=$BIN PREFIX=/usr/local"
# snapshot DIR: every path with its type and, for files, a checksum
snapshot() { (cd "$1" && find . | sort | while IFS= read -r f; do
    if [ -f "$f" ]; then echo "$f $(md5sum <"$f" | cut -c1-32)"; else echo "$f dir"; fi; done); }

D=$W/d1
mkdir -p "$D"
$MK install DESTDIR="$D" >"$W/log" 2>&1
rc=$?
P=$D/usr/local
name="make install PREFIX=/usr/local DESTDIR=...: binary, gzip man page, example config, etc config"
if [ $rc -eq 0 ] && [ -x "$P/bin/tokscope" ] && gzip -t "$P/share/man/man1/tokscope.1.gz" &&
    gzip -dc "$P/share/man/man1/tokscope.1.gz" | cmp -s - man/tokscope.1 &&
    cmp -s "$P/share/doc/tokscope/tokscope.ini" conf/tokscope.ini && cmp -s "$P/etc/tokscope/tokscope.ini" conf/tokscope.ini &&
    [ "$(stat -c %a "$P/share/man/man1/tokscope.1.gz")" = 644 ]; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/log")" "$(cd "$D" && find . | head -20)"; fi

name="the installed binary runs and reads PREFIX/etc/tokscope/tokscope.ini"
if "$P/bin/tokscope" --version | grep -q '^tokscope ' &&
    env -u NO_COLOR HOME="$W" XDG_CONFIG_HOME="$W/x" "$P/bin/tokscope" --print-config 2>/dev/null | grep -q '^;   /usr/local/etc/tokscope/tokscope.ini'; then
    ok "$name"
else not_ok "$name"; fi

name="make install PREFIX=/usr puts the system config in /etc"
if make -n -s --no-print-directory BUILD="$BUILD" BIN="$BIN" PREFIX=/usr DESTDIR="$W/n" install 2>/dev/null |
    grep -q "install.sh install \"$W/n\" \"/usr/bin\" \"/usr/share/man\" \"/usr/share/doc/tokscope\" \"/etc\""; then ok "$name"
else not_ok "$name" "$(make -n -s BUILD="$BUILD" BIN="$BIN" PREFIX=/usr DESTDIR="$W/n" install 2>&1 | tail -n 3)"; fi

name="make uninstall leaves an empty DESTDIR as it was"
$MK uninstall DESTDIR="$D" >"$W/log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(cd "$D" && find . | wc -l)" -eq 1 ]; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/log")" "$(cd "$D" && find . | head)"; fi

# a tree with things of its own: another program, and a system config
D=$W/d2
mkdir -p "$D/usr/local/bin" "$D/usr/local/etc/tokscope" "$D/usr/local/share/man/man1"
echo other >"$D/usr/local/bin/other"
printf '[sampling]\ntemp = 0.1\n' >"$D/usr/local/etc/tokscope/tokscope.ini"
snapshot "$D" >"$W/before"
$MK install DESTDIR="$D" >"$W/log" 2>&1 && $MK install DESTDIR="$D" >>"$W/log" 2>&1
rc=$?
name="install over an existing system config keeps it (twice over)"
if [ $rc -eq 0 ] && grep -q 'temp = 0.1' "$D/usr/local/etc/tokscope/tokscope.ini" && grep -q "kept" "$W/log"; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/log")"; fi
$MK uninstall DESTDIR="$D" >"$W/log" 2>&1
snapshot "$D" >"$W/after"
name="uninstall removes exactly what install added (a config that was there before stays)"
if cmp -s "$W/before" "$W/after"; then ok "$name"
else not_ok "$name" "$(diff "$W/before" "$W/after" | head -n 8)"; fi

D=$W/d3
mkdir -p "$D"
$MK install DESTDIR="$D" >"$W/log" 2>&1
echo "threads = 2" >>"$D/usr/local/etc/tokscope/tokscope.ini"
$MK uninstall DESTDIR="$D" >"$W/log" 2>&1
rc=$?
name="uninstall keeps a system config the user changed, and only it (with its directories)"
left=$(cd "$D" && find . -type f)
if [ $rc -eq 0 ] && [ "$left" = "./usr/local/etc/tokscope/tokscope.ini" ] && grep -q 'kept' "$W/log" &&
    [ "$(cd "$D" && find . | wc -l)" -eq 6 ]; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/log")" "$(cd "$D" && find .)"; fi

name="uninstall where nothing was installed is an error, and touches nothing"
mkdir -p "$W/d4/usr/local/bin" && echo x >"$W/d4/usr/local/bin/tokscope"
$MK uninstall DESTDIR="$W/d4" >"$W/log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ -f "$W/d4/usr/local/bin/tokscope" ] && grep -q 'installed-files' "$W/log"; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/log")"; fi

# A packager's staging directory that does not exist yet: created, with its
# parents (mkdirs recursed on / forever there, issue 30).
name="make install DESTDIR=a directory that does not exist yet creates it"
timeout 60 $MK install DESTDIR="$W/d5/not/yet" >"$W/log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -x "$W/d5/not/yet/usr/local/bin/tokscope" ]; then ok "$name"
else not_ok "$name" "exit $rc" "$(tail -c 300 "$W/log")"; fi
name="make uninstall after it leaves the staging directory empty"
$MK uninstall DESTDIR="$W/d5/not/yet" >"$W/log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -d "$W/d5/not/yet" ] && [ -z "$(ls -A "$W/d5/not/yet")" ]; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/log")" "$(cd "$W/d5" && find . | head)"; fi

# Plain `make` on a machine without the Debian packages stopped deep in the
# compiler (cjson/cJSON.h: No such file or directory, issue 30): it now says
# in one line which packages are missing and to run make deps.
name="make without a Debian package it needs says so in one line and exits non-zero"
if command -v dpkg-query >/dev/null; then
    # as typed in a shell: not a sub-make of make test (MAKELEVEL skips the check)
    env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS make -s --no-print-directory BUILD="$BUILD" BIN="$BIN" \
        DEB_PKGS="gcc tokscope-no-such-package" deps-check \
        >"$W/log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && [ "$(grep -c . "$W/log")" -eq 1 ] && grep -q 'tokscope-no-such-package' "$W/log" &&
        grep -q 'make deps' "$W/log" && ! grep -q 'gcc' "$W/log"; then ok "$name: $(cat "$W/log")"
    else not_ok "$name" "exit $rc" "$(cat "$W/log")"; fi
else
    echo "skip - $name (no dpkg-query)"
fi
