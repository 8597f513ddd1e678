#!/usr/bin/env bash
# `npm run demo`: the first run. On a Debian/Ubuntu machine it installs what is missing (Orthanc and
# its DICOMweb plugin, dcmtk, nginx, PostgreSQL, Redis; the node modules; the OHIF viewer), builds
# the service, then runs the whole archive on loopback with demo data (scripts/demo/stack.ts) and
# prints where to sign in. A second run reuses everything (.local/, the pacs_demo database).
# DEMO_CHECK=1 npm run demo: the same, then it signs in as the demo doctor, lists the studies, opens
# an image through the proxy, previews a draft report's PDF, prints a one-line verdict, stops what it
# started and exits 0 or 1.
# Production runs with docker compose instead (docker/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '== %s\n' "$*"; }
fail() { printf 'first run: %s\n' "$*" >&2; exit 1; }

# --- Node.js ------------------------------------------------------------------------------------
# The versions package.json's engines names, which CI runs: from 20.19 and 22.12 on Node can require()
# an ES module, which new releases of dependencies increasingly are; older versions are not tested.
command -v node >/dev/null 2>&1 || fail "Node.js is not installed (20.19 or newer is needed)"
node -e 'const [major, minor] = process.versions.node.split(".").map(Number);
  process.exit((major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major >= 23 ? 0 : 1)' ||
  fail "Node.js $(node --version) is too old: 20.19 (or 22.12) or newer is needed"

# --- system packages -------------------------------------------------------------------------
need=()
[ -x /usr/sbin/Orthanc ] || command -v Orthanc >/dev/null 2>&1 || need+=(orthanc)
[ -f /usr/share/orthanc/plugins/libOrthancDicomWeb.so ] || need+=(orthanc-dicomweb)
[ -f /usr/share/orthanc/plugins/libOrthancPostgreSQLIndex.so ] || need+=(orthanc-postgresql)  # listed in docker/orthanc/orthanc.json (idle without its PostgreSQL section)
command -v storescu >/dev/null 2>&1 || need+=(dcmtk)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx)
command -v pg_isready >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    fail "missing packages: ${need[*]} (install them with: apt-get install ${need[*]})"
  fi
  command -v apt-get >/dev/null 2>&1 || fail "missing packages: ${need[*]} (no apt-get here: install them with your package manager)"
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || fail "apt-get update failed: cannot install ${need[*]}"
  for package in "${need[@]}"; do
    "${sudo[@]}" apt-get install -y -qq "$package" >/dev/null || fail "could not install the package $package (apt-get install $package)"
  done
fi

# --- PostgreSQL and Redis (local, default ports) --------------------------------------------------
if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  say "starting PostgreSQL"
  cluster=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  [ -n "$cluster" ] || fail "PostgreSQL is installed but has no cluster (package postgresql)"
  if [ "$(id -u)" -eq 0 ]; then pg_ctlcluster --skip-systemctl-redirect "$cluster" main start
  else sudo pg_ctlcluster --skip-systemctl-redirect "$cluster" main start; fi
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  say "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no >/dev/null
fi
for _ in $(seq 1 30); do
  pg_isready -h 127.0.0.1 -p 5432 -q && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break
  sleep 1
done
pg_isready -h 127.0.0.1 -p 5432 -q || fail "PostgreSQL does not answer on 127.0.0.1:5432"
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || fail "Redis does not answer on 127.0.0.1:6379"
# The service connects as postgres without a password (DATABASE_URL can say otherwise).
if [ -z "${DATABASE_URL:-}" ] && ! psql -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then
  fail "PostgreSQL refuses user postgres on 127.0.0.1 without a password: set DATABASE_URL=postgres://USER:PASSWORD@127.0.0.1:5432/pacs_demo"
fi

# --- node modules, viewer, build -------------------------------------------------------------------
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund
fi
node viewer/install.js
if [ ! -f dist/src/main.js ] || [ -n "$(find src -newer dist/src/main.js -name '*.ts' -print -quit)" ]; then
  say "building"
  npm run build
fi

# The demo runs from its source (transpiled as it loads, no type check): nothing built earlier can
# stand in for a file it needs. DEMO_CHECK=1 makes it check itself and stop (scripts/demo/stack.ts).
exec node --require ts-node/register/transpile-only scripts/demo/stack.ts
