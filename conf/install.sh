#!/bin/sh
# make install / make uninstall (the Makefile passes the directories).
#
#   install.sh install   DESTDIR BINDIR MANDIR DOCDIR SYSCONFDIR BIN
#   install.sh uninstall DESTDIR BINDIR MANDIR DOCDIR SYSCONFDIR
#
# install puts the binary in BINDIR, the man page gzip-compressed in
# MANDIR/man1, the example configuration in DOCDIR and, only when there is
# none, in SYSCONFDIR/tokscope. It lists what it created (files, the
# directories that did not exist, and the system config if it placed it) in
# DOCDIR/installed-files, so that uninstall removes exactly that: a system
# config the user has changed since, or one that was there before, stays, and
# so does every directory that existed before or holds other files.
set -eu
cmd=$1 D=$2 BINDIR=$3 MANDIR=$4 DOCDIR=$5 SYSCONFDIR=$6
MANIFEST=$DOCDIR/installed-files
CONF=$SYSCONFDIR/tokscope/tokscope.ini

# mkdirs DIR: creates DIR and its missing parents, recording each created one
# (DESTDIR itself, a packager's staging directory, is created but not ours to
# remove: its creation is not recorded)
mkdirs() {
    [ -d "$D$1" ] && return 0
    case $1 in /|.|'') mkdir -p "$D/"; return 0 ;; esac
    mkdirs "$(dirname "$1")"
    mkdir "$D$1"
    echo "dir $1" >>"$NEW"
}

case $cmd in
install)
    BIN=$7
    NEW=$(mktemp)
    trap 'rm -f "$NEW"' EXIT
    # a previous install's record stays: what it created is ours to remove
    [ -f "$D$MANIFEST" ] && cat "$D$MANIFEST" >>"$NEW"
    for d in "$BINDIR" "$MANDIR/man1" "$DOCDIR"; do mkdirs "$d"; done
    install -m 755 "$BIN" "$D$BINDIR/tokscope"
    echo "file $BINDIR/tokscope" >>"$NEW"
    gzip -9n <man/tokscope.1 >"$D$MANDIR/man1/tokscope.1.gz"
    chmod 644 "$D$MANDIR/man1/tokscope.1.gz"
    echo "file $MANDIR/man1/tokscope.1.gz" >>"$NEW"
    install -m 644 conf/tokscope.ini "$D$DOCDIR/tokscope.ini"
    echo "file $DOCDIR/tokscope.ini" >>"$NEW"
    if [ ! -e "$D$CONF" ]; then
        mkdirs "$SYSCONFDIR/tokscope"
        install -m 644 conf/tokscope.ini "$D$CONF"
        echo "conf $CONF" >>"$NEW"
    else
        echo "install: kept $D$CONF (already there)"
    fi
    awk '!seen[$0]++' "$NEW" >"$D$MANIFEST"
    chmod 644 "$D$MANIFEST"
    echo "installed tokscope in $D$BINDIR, its man page in $D$MANDIR/man1, the example configuration in $D$DOCDIR"
    ;;
uninstall)
    if [ ! -f "$D$MANIFEST" ]; then
        echo "uninstall: $D$MANIFEST not found: nothing was installed there by make install" >&2
        exit 1
    fi
    # the system config first, while the example it is compared with is there
    grep '^conf ' "$D$MANIFEST" | cut -c6- | while IFS= read -r f; do
        if [ ! -e "$D$f" ]; then :
        elif cmp -s "$D$f" "$D$DOCDIR/tokscope.ini"; then rm -f "$D$f"
        else echo "uninstall: kept $D$f (changed since it was installed)"; fi
    done
    grep '^file ' "$D$MANIFEST" | cut -c6- | while IFS= read -r f; do rm -f "$D$f"; done
    dirs=$(grep '^dir ' "$D$MANIFEST" | cut -c5- | sort -r) || true
    rm -f "$D$MANIFEST"
    # the directories it created, deepest first, and only when empty
    echo "$dirs" | while IFS= read -r d; do [ -n "$d" ] && rmdir "$D$d" 2>/dev/null || true; done
    echo "uninstalled tokscope from $D${BINDIR%/bin}"
    ;;
*)
    echo "usage: install.sh install|uninstall DESTDIR BINDIR MANDIR DOCDIR SYSCONFDIR [BIN]" >&2
    exit 2
    ;;
esac
