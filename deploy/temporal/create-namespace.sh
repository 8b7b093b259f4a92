#!/bin/sh
# Registers pacer's namespace once the server answers. Safe to run again.
set -eu

: "${TEMPORAL_ADDRESS:?}" "${NAMESPACE:=default}"

tries=0
until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 60 ]; then
		echo "temporal at $TEMPORAL_ADDRESS is not healthy after 2 minutes" >&2
		exit 1
	fi
	sleep 2
done

temporal operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$NAMESPACE" >/dev/null 2>&1 ||
	temporal operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$NAMESPACE" --retention 72h
echo "namespace $NAMESPACE ready"
