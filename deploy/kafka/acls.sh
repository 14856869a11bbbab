#!/bin/sh
# Applies deploy/kafka/acls.txt to the compose cluster as its super user (the one-shot
# `kafka-acls` service, on the apache/kafka image). Adding an ACL that exists changes nothing,
# so every `up` applies the file again: a line added there is granted on the next one.
set -eu
ACLS=${1:-/acls.txt}
BOOTSTRAP=${KAFKA_BOOTSTRAP:-kafka-1:9092}
CONFIG=${KAFKA_ADMIN_CONFIG:-/kafka-secrets/admin.properties}
grep -v '^[[:space:]]*\(#\|$\)' "$ACLS" | while read -r principal resource pattern name operations; do
  set --
  for operation in $operations; do set -- "$@" --operation "$operation"; done
  case "$resource" in
    topic) set -- "$@" --topic "$name" ;;
    group) set -- "$@" --group "$name" ;;
    cluster) set -- "$@" --cluster ;;
    *) echo "acls: unknown resource $resource" >&2; exit 2 ;;
  esac
  /opt/kafka/bin/kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" \
    --add --allow-principal "User:$principal" \
    --resource-pattern-type "$(echo "$pattern" | tr '[:lower:]' '[:upper:]')" "$@" >/dev/null
  echo "acls: $principal $resource $pattern $name: $operations"
done
