#!/usr/bin/env bash
# Counts what apt would install for scripts/setup.sh's package sets on a fresh
# Debian 12, on this machine, whatever is installed here: apt simulates against a
# dpkg status file of a fresh system instead of this one's.
#
#   bash bench/cold_start_packages.sh [FRESH_LIST]
#
# FRESH_LIST: the packages of the fresh image, one name a line (`dpkg-query -W -f
# '${Package}\n'` run there); without it, a minimal Debian 12 (debootstrap
# --variant=minbase): the Priority required and Essential packages installed here
# and what they depend on. Needs `apt-get update` to have run. bench/cold_start.md
# has the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/archives/partial"

python3 - "$tmp/status" "${1:-}" <<'EOF'
import re, subprocess, sys
out, fresh = sys.argv[1], sys.argv[2]
info = {}
for p in open('/var/lib/dpkg/status').read().strip().split('\n\n'):
    f = dict(re.findall(r'^([\w-]+): ?(.*)$', p, re.M))
    if f.get('Status', '').endswith('ok installed'):
        info[f['Package']] = (p, f)
if fresh:
    keep = {l.strip().split(':')[0] for l in open(fresh) if l.strip()}
else:  # minbase: required + essential + apt, closed over Depends/Pre-Depends
    provides = {}
    for n, (_, f) in info.items():
        for x in f.get('Provides', '').split(','):
            if x.strip():
                provides.setdefault(x.split()[0], []).append(n)
    todo = [n for n, (_, f) in info.items()
            if f.get('Priority') == 'required' or f.get('Essential') == 'yes'] + ['apt']
    keep = set()
    while todo:
        n = todo.pop().split(':')[0]
        if n in keep:
            continue
        if n not in info:
            todo += provides.get(n, [])
            continue
        keep.add(n)
        f = info[n][1]
        for alt in (f.get('Pre-Depends', '') + ',' + f.get('Depends', '')).split(','):
            for c in (a.split()[0].split(':')[0] for a in alt.split('|') if a.strip()):
                if c in info or c in provides:
                    todo.append(c)
                    break
paras = []
for n in sorted(keep):
    if n in info:
        paras.append(info[n][0])
    else:  # listed fresh package not installed here: its candidate, marked installed
        r = subprocess.run(['apt-cache', 'show', '--no-all-versions', n],
                           capture_output=True, text=True).stdout.strip().split('\n\n')[0]
        if r:
            paras.append(re.sub(r'^(Package: \S+)\n', r'\1\nStatus: install ok installed\n', r,
                                count=1, flags=re.M))
open(out, 'w').write('\n\n'.join(paras) + '\n')
print(f'fresh image: {len(paras)} packages', file=sys.stderr)
EOF

# The package arrays, read from scripts/setup.sh itself.
set_of() {
  sed 's/#.*//' scripts/setup.sh | awk -v a="$1=(" 'index($0, a) == 1 {on = 1; sub(/^[a-z_]*=\(/, "")}
    on {e = index($0, ")"); if (e) {print substr($0, 1, e - 1); exit} print}' | tr -s ' \n' ' '
}
build=$(set_of build_packages)
run=$(set_of run_packages)
tests="$(set_of test_build_packages) $(set_of test_run_packages)"

o=(-o "Dir::State::status=$tmp/status" -o "Dir::Cache::archives=$tmp/archives/"
   -o Debug::NoLocking=1 -o APT::Install-Recommends=false)
count() {  # packages, download MB, installed MB
  local n bytes inst
  n=$(apt-get "${o[@]}" -s install "$@" 2>/dev/null | grep -c '^Inst ' || true)
  bytes=$(apt-get "${o[@]}" -qq --print-uris install "$@" 2>/dev/null | awk '{s += $3} END {print s + 0}')
  inst=$(apt-get "${o[@]}" -s install "$@" 2>/dev/null | awk '/^Inst /{print $2}' |
         xargs -r apt-cache show --no-all-versions 2>/dev/null |
         awk '/^Installed-Size:/{s += $2} END {print s + 0}')
  awk -v n="$n" -v b="$bytes" -v i="$inst" \
    'BEGIN { printf "%4d packages, %4.0f MB to download, %5.0f MB installed\n", n, b / 1e6, i / 1e3 }'
}
printf '%-34s' "demo (setup.sh): build only";  count $build
printf '%-34s' "demo (setup.sh): build + run";  count $build $run
printf '%-34s' "all (setup.sh --tests, test.sh)"; count $build $run $tests
