#!/bin/sh
# Writes OUT (gzip -9n of a man page) from BINARY --help with help2man; called by Packaging.cmake
# at build time. The binary runs as a bare name from its own directory on PATH so that its usage
# line says "picket-sensor", not the build path.
#   manpage.sh HELP2MAN BINARY SECTION VERSION NAME INCLUDE OUT
set -eu
if [ $# -ne 7 ]; then
    echo "manpage.sh: expected 7 arguments (HELP2MAN BINARY SECTION VERSION NAME INCLUDE OUT), got $#" >&2
    exit 2
fi
help2man=$1 binary=$2 section=$3 version=$4 name=$5 include=$6 out=$7
dir=$(dirname "$binary")
prog=$(basename "$binary")
tmp="$out.tmp"
PATH="$dir:$PATH" "$help2man" --no-info --no-discard-stderr --section="$section" \
    --version-string="$version" --name="$name" --include="$include" --output="$tmp" "$prog"
# help2man exits 0 even when the program printed no usage line: insist on the SYNOPSIS it makes
# of one.
if ! grep -q '^\.SH SYNOPSIS' "$tmp"; then
    echo "manpage.sh: $binary --help printed no usage line; $out not written" >&2
    rm -f "$tmp"
    exit 1
fi
gzip -9n -c "$tmp" > "$out"
rm -f "$tmp"
