#!/bin/sh
# The code generator's calls go one way (docs/codegen.md, "Who calls whom"):
# napkin-cuda.c → the printers → napkin-gen-common.c. Read from the static library's
# symbols: no other file of it uses a function napkin-cuda.c defines, and
# napkin-gen-common.c uses none that another file of the library defines.
# Usage: call-graph.sh NM LIBRARY.a   (TAP output)
nm=$1
lib=$2
if [ -z "$nm" ]; then
  echo "1..0 # SKIP no nm"
  exit 0
fi
syms=$(mktemp) || exit 1
trap 'rm -f "$syms"' EXIT
# "member.o DEFINED|USED symbol", one line each
"$nm" -A "$lib" | awk '{
  split ($1, path, ":"); member = path[2]; if (member == "") member = path[1]; sub (/.*\//, "", member);
  if (NF == 3 && $2 ~ /^[TDBRtdbr]$/) print member, "def", $3;
  else if (NF == 3 && $2 == "U") print member, "use", $3;
  else if (NF == 2 && $2 == "U") print member, "use", $3
}' > "$syms"

echo "1..2"
up=$(awk '$1 ~ /napkin-cuda\.c\.o$/ && $2 == "def" { d[$3] = 1 }
          $1 !~ /napkin-cuda\.c\.o$/ && $2 == "use" { u[$3] = u[$3] " " $1 }
          END { for (s in u) if (s in d) print s " (from" u[s] ")" }' "$syms" | tr '\n' ';')
if [ -n "$up" ]; then
  echo "not ok 1 - files of the library call back into napkin-cuda.c: $up"
else
  echo "ok 1 - nothing calls back into napkin-cuda.c"
fi
down=$(awk '$1 !~ /napkin-gen-common\.c\.o$/ && $2 == "def" { d[$3] = $1 }
            $1 ~ /napkin-gen-common\.c\.o$/ && $2 == "use" { u[$3] = 1 }
            END { for (s in u) if (s in d) print s " (in " d[s] ")" }' "$syms" | tr '\n' ';')
if [ -n "$down" ]; then
  echo "not ok 2 - napkin-gen-common.c calls up into the library: $down"
else
  echo "ok 2 - napkin-gen-common.c calls nothing above it"
fi
