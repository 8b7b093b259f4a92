#!/bin/sh
# Creates Temporal's two databases on the compose Postgres and brings their
# schemas to this admin-tools image's version. Safe to run again: existing
# databases are kept, and update-schema applies only what is missing.
set -eu

: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${POSTGRES_PWD:?}"
export SQL_PASSWORD="$POSTGRES_PWD"
schemas=/etc/temporal/schema/postgresql/v12

sql() {
	temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p 5432 -u "$POSTGRES_USER" "$@"
}

for db in temporal temporal_visibility; do
	sql --db "$db" create 2>/dev/null || echo "database $db exists"
done
sql --db temporal setup-schema -v 0.0
sql --db temporal update-schema -d "$schemas/temporal/versioned"
sql --db temporal_visibility setup-schema -v 0.0
sql --db temporal_visibility update-schema -d "$schemas/visibility/versioned"
echo "temporal schemas ready"
