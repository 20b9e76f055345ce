#!/usr/bin/env bash
# Real OpenStack (2025.1 "Epoxy", Debian 13 packages) on loopback inside a trixie chroot.
#
# usage: os-harness.sh up ROOT       start Keystone, Neutron and Ironic (reuses ROOT's chroot; when the
#                                    services already answer, does nothing) and print the clouds.yaml path
#        os-harness.sh down ROOT     stop every service it started and unmount
#        os-harness.sh status ROOT   exit 0 when all services answer
#        os-harness.sh clouds ROOT   print the clouds.yaml path (exit 1 when not up)
#
# Runs as root; no Docker, no PyPI. The clouds.yaml (clouds local-admin, local-system, local-demo) is
# written to $CLOUDS_OUT, default ROOT/srv/clouds.yaml. A cold start builds the chroot (about 4 min);
# with the chroot present it takes under a minute and starts from empty databases.
set -euo pipefail
cmd=${1:?up|down|status|clouds}; ROOT=$(realpath -m "${2:?chroot dir}")
MIRROR=${MIRROR:-$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)}  # the machine's own Debian mirror
KS_PORT=${KS_PORT:-5000} NEUTRON_PORT=${NEUTRON_PORT:-9696} IRONIC_PORT=${IRONIC_PORT:-6385} DB_PORT=${DB_PORT:-3306}
CLOUDS_OUT=${CLOUDS_OUT:-$ROOT/srv/clouds.yaml}
SERVICES=(keystone neutron ironic mariadb)
in_root() { chroot "$ROOT" "$@"; }
# daemon starts a service that outlives this script. It gets no descriptor beyond stdio: a lock the
# caller holds (flock LOCKFILE hack/os-harness.sh up) would otherwise stay held by the services for
# as long as they run, and everyone waiting on that lock would wait for ever.
daemon() {
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    in_root sh -c "$1"
  )
}
t0=$(date +%s); phase() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
wait_http() { for _ in $(seq 1 240); do curl -s -o /dev/null "$1" && return 0; sleep 0.5; done; echo "timeout: $1" >&2; return 1; }

mounts() { mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"; mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"; }
pid_alive() { [ -f "$ROOT/srv/$1.pid" ] && kill -0 "$(cat "$ROOT/srv/$1.pid")" 2>/dev/null; }
answering() {
  curl -sf -o /dev/null "http://127.0.0.1:$KS_PORT/v3" && curl -sf -o /dev/null "http://127.0.0.1:$NEUTRON_PORT/" &&
    curl -sf -o /dev/null "http://127.0.0.1:$IRONIC_PORT/"
}
is_up() { for s in "${SERVICES[@]}"; do pid_alive "$s" || return 1; done; answering && [ -s "$CLOUDS_OUT" ]; }

# stop_all ends the processes this script recorded, by pid, politely first.
stop_all() {
  local pids=() p
  for s in "${SERVICES[@]}"; do
    if pid_alive "$s"; then p=$(cat "$ROOT/srv/$s.pid"); pids+=("$p"); kill "$p" 2>/dev/null || true; fi
  done
  for _ in $(seq 1 40); do
    local alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break; sleep 0.5
  done
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      for c in $(pgrep -P "$p" || true); do kill -9 "$c" 2>/dev/null || true; done
      kill -9 "$p" 2>/dev/null || true
    fi
  done
  rm -f "$ROOT"/srv/*.pid
}

case "$cmd" in
  down)
    [ -d "$ROOT/srv" ] && stop_all
    for m in proc dev; do mountpoint -q "$ROOT/$m" && umount "$ROOT/$m"; done
    echo "down: $ROOT"; exit 0 ;;
  status)
    if is_up; then echo "up: keystone :$KS_PORT neutron :$NEUTRON_PORT ironic :$IRONIC_PORT"; exit 0; fi
    echo "not up"; exit 1 ;;
  clouds)
    is_up || { echo "not up: run $0 up $ROOT" >&2; exit 1; }
    echo "$CLOUDS_OUT"; exit 0 ;;
  up) ;;
  *) echo "unknown command $cmd (up|down|status|clouds)" >&2; exit 2 ;;
esac

if [ -d "$ROOT/srv" ] && is_up; then
  phase "already up: keystone :$KS_PORT neutron :$NEUTRON_PORT ironic :$IRONIC_PORT"
  echo "clouds: $CLOUDS_OUT"; exit 0
fi
# Half-started leftovers (a crashed service, a killed run) would hold ports or the database.
[ -d "$ROOT/srv" ] && stop_all

if [ ! -x "$ROOT/usr/bin/neutron-server" ]; then
  phase "debootstrap"
  command -v debootstrap >/dev/null || { apt-get update -qq; apt-get install -y -qq debootstrap >/dev/null; }
  debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >/dev/null
  printf 'deb %s trixie main\ndeb %s trixie-updates main\ndeb %s-security trixie-security main\n' "$MIRROR" "$MIRROR" "$MIRROR" > "$ROOT/etc/apt/sources.list"
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod +x "$ROOT/usr/sbin/policy-rc.d"   # no service starts in the chroot
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"; mounts
  phase "apt install"
  in_root apt-get update -qq
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ironic-common neutron-common python3-keystone mariadb-server curl >/dev/null
  in_root apt-get clean
fi
mounts

phase "config"
mkdir -p "$ROOT"/srv/{ironic,neutron/state,neutron/lock,neutron/pylib,keystone} "$ROOT/run/mysqld"; in_root chown mysql:mysql /run/mysqld
authtoken() { printf '[keystone_authtoken]\nwww_authenticate_uri = http://127.0.0.1:%s/v3\nauth_url = http://127.0.0.1:%s/v3\nauth_type = password\nproject_domain_name = Default\nuser_domain_name = Default\nproject_name = service\nusername = %s\npassword = %s-secret\n# no token cache: a revoked token must fail at once, as the re-authentication tests expect\ntoken_cache_time = -1\n' "$KS_PORT" "$KS_PORT" "$1" "$1"; }
cat > "$ROOT/srv/keystone/keystone.conf" <<EOC
[database]
connection = mysql+pymysql://os:os@127.0.0.1:$DB_PORT/keystone
[identity]
password_hash_rounds = 4
[token]
provider = fernet
[fernet_tokens]
key_repository = /srv/keystone/fernet-keys
[fernet_receipts]
key_repository = /srv/keystone/fernet-receipts
[credential]
key_repository = /srv/keystone/credential-keys
EOC
cat > "$ROOT/srv/neutron/neutron.conf" <<EOC
[DEFAULT]
auth_strategy = keystone
bind_host = 127.0.0.1
bind_port = $NEUTRON_PORT
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
core_plugin = ml2
service_plugins = router,flavors,network_segment_range,segments
transport_url = fake:/
dhcp_agent_notification = false
state_path = /srv/neutron/state
[database]
connection = mysql+pymysql://os:os@127.0.0.1:$DB_PORT/neutron
[oslo_concurrency]
lock_path = /srv/neutron/lock
[oslo_messaging_notifications]
driver = noop
[ml2]
type_drivers = flat,vlan,vxlan,geneve
tenant_network_types = vxlan
mechanism_drivers = logger
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:199
[ml2_type_vxlan]
vni_ranges = 1000:1999
[ml2_type_geneve]
vni_ranges = 5000:5999
[service_providers]
# extra L3 flavor driver for tests; the built-in single_node/ha/dvr/dvrha ones are added by neutron itself
service_provider = L3_ROUTER_NAT:test_stub:stub_l3.StubL3Driver
$(authtoken neutron)
EOC
cat > "$ROOT/srv/neutron/pylib/stub_l3.py" <<'EOC'
from neutron.services.l3_router.service_providers import base


class StubL3Driver(base.L3ServiceProvider):
    """Test-only router flavor driver."""
EOC
cat > "$ROOT/srv/ironic/ironic.conf" <<EOC
[DEFAULT]
auth_strategy = keystone
rpc_transport = none
host = ironic-test
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = fake,no-firmware
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = noop
default_network_interface = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = fake,no-vendor
[api]
host_ip = 127.0.0.1
port = $IRONIC_PORT
[database]
connection = sqlite:////srv/ironic/ironic.sqlite
[dhcp]
dhcp_provider = none
[conductor]
automated_clean = false
[oslo_messaging_notifications]
driver = noop
$(authtoken ironic)
EOC

phase "mariadb"
daemon "nohup mariadbd --user=mysql --datadir=/var/lib/mysql --socket=/run/mysqld/mysqld.sock --bind-address=127.0.0.1 --port=$DB_PORT --skip-name-resolve --innodb-buffer-pool-size=64M --performance-schema=OFF >/srv/mariadb.log 2>&1 & echo \$! >/srv/mariadb.pid"
for _ in $(seq 1 120); do in_root mariadb-admin --socket=/run/mysqld/mysqld.sock ping >/dev/null 2>&1 && break; sleep 0.5; done
in_root mariadb --socket=/run/mysqld/mysqld.sock -e "DROP DATABASE IF EXISTS neutron; DROP DATABASE IF EXISTS keystone; CREATE DATABASE neutron; CREATE DATABASE keystone; CREATE USER IF NOT EXISTS 'os'@'127.0.0.1' IDENTIFIED BY 'os'; GRANT ALL ON *.* TO 'os'@'127.0.0.1';"

phase "db schemas (3 in parallel)"
K="keystone-manage --config-file /srv/keystone/keystone.conf"
rm -rf "$ROOT"/srv/keystone/{fernet-keys,fernet-receipts,credential-keys} "$ROOT/srv/ironic/ironic.sqlite"
in_root sh -c "$K db_sync && $K fernet_setup --keystone-user root --keystone-group root && $K credential_setup --keystone-user root --keystone-group root && $K bootstrap --bootstrap-password admin-secret --bootstrap-region-id RegionOne --bootstrap-public-url http://127.0.0.1:$KS_PORT/v3/ --bootstrap-internal-url http://127.0.0.1:$KS_PORT/v3/" >"$ROOT/srv/keystone/setup.log" 2>&1 & k=$!
in_root neutron-db-manage --config-file /srv/neutron/neutron.conf upgrade heads >"$ROOT/srv/neutron/dbsync.log" 2>&1 & n=$!
in_root ironic-dbsync --config-file /srv/ironic/ironic.conf create_schema >"$ROOT/srv/ironic/dbsync.log" 2>&1 & i=$!
wait $k; wait $n; wait $i

phase "start services"
daemon "OS_KEYSTONE_CONFIG_DIR=/srv/keystone nohup keystone-wsgi-public --host 127.0.0.1 --port $KS_PORT >/srv/keystone.log 2>&1 & echo \$! >/srv/keystone.pid"
daemon "PYTHONPATH=/srv/neutron/pylib nohup neutron-server --config-file /srv/neutron/neutron.conf >/srv/neutron.log 2>&1 & echo \$! >/srv/neutron.pid"
daemon "nohup ironic --config-file /srv/ironic/ironic.conf >/srv/ironic.log 2>&1 & echo \$! >/srv/ironic.pid"
wait_http "http://127.0.0.1:$KS_PORT/v3"

phase "keystone catalog + users"
in_root python3 - "$KS_PORT" "$NEUTRON_PORT" "$IRONIC_PORT" <<'EOP'
import json, sys, urllib.request
ks, nport, iport = sys.argv[1:4]
KS = f"http://127.0.0.1:{ks}/v3"
def call(method, path, body=None, token=None):
    req = urllib.request.Request(KS + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json", **({"X-Auth-Token": token} if token else {})})
    with urllib.request.urlopen(req) as r:
        data = r.read()
        return r.headers, (json.loads(data) if data else None)
auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": "admin-secret"}}},
                 "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
tok = call("POST", "/auth/tokens", auth)[0]["X-Subject-Token"]
api = lambda m, p, b=None: call(m, p, b, tok)[1]
role = {r["name"]: r["id"] for r in api("GET", "/roles")["roles"]}
proj = {n: api("POST", "/projects", {"project": {"name": n, "domain_id": "default"}})["project"]["id"] for n in ("service", "demo")}
for user, project, r in (("neutron", "service", "admin"), ("ironic", "service", "admin"), ("demo", "demo", "member")):
    uid = api("POST", "/users", {"user": {"name": user, "domain_id": "default", "password": user + "-secret"}})["user"]["id"]
    api("PUT", f"/projects/{proj[project]}/users/{uid}/roles/{role[r]}")
for name, typ, port in (("neutron", "network", nport), ("ironic", "baremetal", iport)):
    sid = api("POST", "/services", {"service": {"name": name, "type": typ}})["service"]["id"]
    api("POST", "/endpoints", {"endpoint": {"service_id": sid, "interface": "public", "region_id": "RegionOne", "url": f"http://127.0.0.1:{port}/"}})
EOP
wait_http "http://127.0.0.1:$NEUTRON_PORT/"; wait_http "http://127.0.0.1:$IRONIC_PORT/"
mkdir -p "$(dirname "$CLOUDS_OUT")"
cloud() {  # name user password scope-lines (no trailing newline)
  printf '  %s:\n    auth:\n      auth_url: http://127.0.0.1:%s/v3\n      username: %s\n      password: %s\n      user_domain_name: Default\n%s\n    region_name: RegionOne\n' \
    "$1" "$KS_PORT" "$2" "$3" "$4"
}
project() { printf '      project_name: %s\n      project_domain_name: Default\n' "$1"; }
{
  echo "# written by hack/os-harness.sh; local-system is a system-scoped admin (Ironic public runbooks need it),"
  echo "# local-demo has only the member role (segment ranges and flavors are refused)"
  echo "clouds:"
  cloud local-admin admin admin-secret "$(project admin)"
  cloud local-system admin admin-secret "      system_scope: all"
  cloud local-demo demo demo-secret "$(project demo)"
} > "$CLOUDS_OUT.tmp"
mv "$CLOUDS_OUT.tmp" "$CLOUDS_OUT"
phase "up: keystone :$KS_PORT neutron :$NEUTRON_PORT ironic :$IRONIC_PORT (admin/admin-secret, demo/demo-secret)"
echo "clouds: $CLOUDS_OUT"
