#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for make dev and
# make test, starting the machine's own cluster when it is installed but down.
# Set PACER_SKIP_PG=1 when DATABASE_URL / PACER_TEST_DATABASE_URL point at a
# server of your own.
set -euo pipefail
[ "${PACER_SKIP_PG:-}" = 1 ] && exit 0

ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

if ! command -v pg_isready >/dev/null 2>&1; then
  echo "PostgreSQL client tools not found. Install PostgreSQL 14+ (Debian: apt-get install postgresql)," >&2
  echo "or set DATABASE_URL and PACER_TEST_DATABASE_URL to a server you have and PACER_SKIP_PG=1." >&2
  exit 1
fi
ready && exit 0

if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "starting PostgreSQL $version (main cluster)…" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 50); do ready && exit 0; sleep 0.2; done
fi

echo "PostgreSQL is not answering on 127.0.0.1:5432. Start it (Debian: pg_ctlcluster <version> main start)," >&2
echo "or set DATABASE_URL and PACER_TEST_DATABASE_URL to a server you have and PACER_SKIP_PG=1." >&2
exit 1
