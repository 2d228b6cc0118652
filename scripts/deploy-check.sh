#!/usr/bin/env bash
# The Kubernetes files of deploy/kubernetes/ (docs/operations.md, "Kubernetes"):
# validated, strictly (no unknown field), against the Kubernetes API's own
# schemas by kubernetes-validate (PyPI; its schemas ship in the package, so it
# reaches no cluster and no network once installed), and every job kind served
# by one worker Deployment exactly once. The alert rules
# (deploy/prometheus/alerts.yaml) and the dashboard (deploy/grafana/) are
# checked for their shape, and every alert for its section in
# docs/operations.md; that each metric they name is exported is a test's
# (tests/tests/metrics.rs, against scrapes of the running API and worker).
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
# The alert rules: a Prometheus rule file (groups of rules, each with an
# expression, a severity, a summary and a runbook section that exists), and
# the dashboard: JSON whose every panel queries something.
"$venv/bin/python" - deploy/prometheus/alerts.yaml deploy/grafana/i9-dashboard.json docs/operations.md <<'PY'
import json, re, sys, yaml
rules_file, dashboard_file, runbook_file = sys.argv[1:]
anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
           for h in re.findall(r"^#+ (.*)$", open(runbook_file).read(), re.M)}
errors = []
doc = yaml.safe_load(open(rules_file))
if set(doc) != {"groups"} or not doc["groups"]:
    errors.append(f"{rules_file}: one key, groups, a non-empty list")
alerts = set()
for g in doc.get("groups") or []:
    if not isinstance(g.get("name"), str) or not g.get("rules"):
        errors.append(f"{rules_file}: a group without a name or rules: {g!r:.80}")
        continue
    for r in g["rules"]:
        name = r.get("alert")
        unknown = set(r) - {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            errors.append(f"{rules_file}: a rule without a valid alert name: {r!r:.80}")
            continue
        if name in alerts:
            errors.append(f"{rules_file}: {name} twice")
        alerts.add(name)
        if unknown:
            errors.append(f"{rules_file}: {name}: unknown keys {sorted(unknown)}")
        if not isinstance(r.get("expr"), str) or not r["expr"].strip():
            errors.append(f"{rules_file}: {name}: no expr")
        elif r["expr"].count("(") != r["expr"].count(")"):
            errors.append(f"{rules_file}: {name}: unbalanced parentheses")
        if "for" in r and not re.fullmatch(r"([0-9]+[smhd])+", str(r["for"])):
            errors.append(f"{rules_file}: {name}: for {r['for']!r} is not a duration")
        if (r.get("labels") or {}).get("severity") not in ("page", "ticket"):
            errors.append(f"{rules_file}: {name}: severity must be page or ticket")
        ann = r.get("annotations") or {}
        runbook = str(ann.get("runbook", ""))
        if not ann.get("summary") or not runbook.startswith("docs/operations.md#"):
            errors.append(f"{rules_file}: {name}: needs a summary and a runbook in docs/operations.md")
        elif runbook.split("#", 1)[1] not in anchors:
            errors.append(f"{rules_file}: {name}: docs/operations.md has no section #{runbook.split('#', 1)[1]}")
dash = json.load(open(dashboard_file))
panels = dash.get("panels") or []
if not dash.get("title") or not dash.get("uid") or not panels:
    errors.append(f"{dashboard_file}: a title, a uid and panels")
for p in panels:
    targets = p.get("targets") or []
    if not p.get("title") or not targets or not all(t.get("expr", "").strip() for t in targets):
        errors.append(f"{dashboard_file}: panel {p.get('title')!r}: every target needs an expr")
    for t in targets:
        if t.get("expr", "").count("(") != t.get("expr", "").count(")"):
            errors.append(f"{dashboard_file}: panel {p.get('title')!r}: unbalanced parentheses")
if errors:
    print("\n".join("deploy-check: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
print(f"deploy-check: {len(alerts)} alert rules, each with its runbook section; {len(panels)} dashboard panels")
PY

echo "deploy-check: deploy/kubernetes/*.yaml valid for Kubernetes $KUBERNETES_VERSION; $(echo "$kinds" | wc -l) job kinds, each served once"
