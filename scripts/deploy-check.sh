#!/usr/bin/env bash
# The Kubernetes files of deploy/kubernetes/ (docs/operations.md, "Kubernetes"):
# validated, strictly (no unknown field), against the Kubernetes API's own
# schemas by kubernetes-validate (PyPI; its schemas ship in the package, so it
# reaches no cluster and no network once installed), and every job kind served
# by one worker Deployment exactly once.
#
#   scripts/deploy-check.sh        (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
KUBERNETES_VALIDATE_VERSION=1.37.0
# The oldest Kubernetes the files are meant for (autoscaling/v2, policy/v1).
KUBERNETES_VERSION=1.30.0

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
venv="$target_dir/kubernetes-validate"
if [ "$("$venv/bin/kubernetes-validate" --version 2>/dev/null)" != "$KUBERNETES_VALIDATE_VERSION" ]; then
  echo "deploy-check: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $venv..."
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi
# A kind without a schema (a CRD) is only a warning to the tool: refused here.
out=$("$venv/bin/kubernetes-validate" --strict --quiet -k "$KUBERNETES_VERSION" deploy/kubernetes/*.yaml 2>&1) || {
  echo "$out" >&2
  exit 1
}
if [ -n "$out" ]; then
  echo "$out" >&2
  echo "deploy-check: every resource must validate against a schema (no warnings)" >&2
  exit 1
fi

# Every job kind (as i9-worker --help lists them) in exactly one WORKER_KINDS.
cargo build --quiet --locked -p i9-workers --bin i9-worker
kinds=$("$target_dir/debug/i9-worker" --help | sed -n 's/.*Kinds: //p' | tr -d ' ' | tr ',' '\n' | sort)
[ -n "$kinds" ] || { echo "deploy-check: i9-worker --help lists no kinds" >&2; exit 1; }
served=$(grep -A1 'name: WORKER_KINDS' deploy/kubernetes/workers.yaml | sed -n 's/.*value: "\(.*\)"/\1/p' | tr ',' '\n' | sort)
if [ "$kinds" != "$served" ]; then
  echo "deploy-check: the worker Deployments serve these kinds:" >&2
  echo "$served" >&2
  echo "deploy-check: i9-worker has these (each must be served exactly once):" >&2
  echo "$kinds" >&2
  exit 1
fi
echo "deploy-check: deploy/kubernetes/*.yaml valid for Kubernetes $KUBERNETES_VERSION; $(echo "$kinds" | wc -l) job kinds, each served once"
