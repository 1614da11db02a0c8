#!/usr/bin/env bash
# make deb-check: lintian on every .deb in dist/, then the amd64 .deb installed
# with dpkg on this machine (CI's is a throwaway) and checked as an operator
# would find it - the user, the directories and their modes, the conffile, a
# configuration check, the unit verified by systemd-analyze, the broker
# started as the saguin user - then removed (configuration and data kept)
# and purged (both gone).
#
# It installs into the real root, so it refuses to run over a saguin package
# it did not install itself unless SAGUIN_DEB_CHECK_REPLACE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${DIST:-dist}
fail() { echo "deb-check: FAIL: $*" >&2; exit 1; }
ok() { echo "deb-check: ok: $*"; }

shopt -s nullglob
debs=("$DIST"/saguin_*.deb)
[ ${#debs[@]} -gt 0 ] || fail "no .deb in $DIST/: run make dist first"
for deb in "${debs[@]}"; do
	# lintian warns when run as root; its findings are what count.
	lintian --fail-on error,warning "$deb" 2> >(grep -v 'running with root privileges' >&2) || fail "lintian $deb"
	ok "lintian $(basename "$deb")"
done

amd64=("$DIST"/saguin_*_amd64.deb)
[ ${#amd64[@]} -eq 1 ] || fail "want exactly one amd64 .deb in $DIST/, have ${#amd64[@]}"
deb=${amd64[0]}
if dpkg-query -W -f='${Status}' saguin 2>/dev/null | grep -q 'ok installed' && [ "${SAGUIN_DEB_CHECK_REPLACE:-}" != 1 ]; then
	fail "a saguin package is installed already; SAGUIN_DEB_CHECK_REPLACE=1 lets this check replace and purge it"
fi
dpkg -P saguin >/dev/null 2>&1 || true

expect() { # path owner:group mode
	local got
	got=$(stat -c '%U:%G %a' "$1" 2>/dev/null) || fail "$1 is missing"
	[ "$got" = "$2 $3" ] || fail "$1 is $got, want $2 $3"
}

dpkg -i "$deb" >"$DIST/deb-check-install.log" 2>&1 || { cat "$DIST/deb-check-install.log" >&2; fail "dpkg -i $deb"; }
ok "installed $(basename "$deb")"
getent passwd saguin >/dev/null || fail "no saguin user"
getent group saguin >/dev/null || fail "no saguin group"
[ "$(getent passwd saguin | cut -d: -f7)" = /usr/sbin/nologin ] || fail "the saguin user has a login shell"
expect /usr/bin/saguin root:root 755
expect /etc/saguin/saguin.yaml root:root 644
expect /etc/saguin/clients.passwd root:saguin 640
expect /var/lib/saguin saguin:saguin 750
dpkg-query -W -f='${Conffiles}\n' saguin | grep -q '^ /etc/saguin/saguin.yaml ' || fail "/etc/saguin/saguin.yaml is not a conffile"
version=$(dpkg-query -W -f='${Version}' saguin)
ok "user and group saguin, modes and owners, conffile; package $version"
saguin --version | grep -q '^saguin ' || fail "saguin --version"
saguin --licenses | grep -q 'github.com/mattn/go-sqlite3' || fail "saguin --licenses"
cmp -s <(saguin --licenses) /usr/share/doc/saguin/licenses.txt || fail "/usr/share/doc/saguin/licenses.txt is not what saguin --licenses prints"

# As installed, no user is named: the check refuses, saying why.
if out=$(saguin --check-config /etc/saguin/saguin.yaml 2>&1); then
	fail "--check-config passed with an empty password file"
fi
grep -q clients.passwd <<<"$out" || fail "--check-config does not name the password file: $out"
# A Mosquitto password file is used as it is: mosquitto_passwd writes the user.
command -v mosquitto_passwd >/dev/null || fail "mosquitto_passwd missing (scripts/install-test-deps.sh installs mosquitto)"
mosquitto_passwd -b /etc/saguin/clients.passwd device-1 secret-1
chgrp saguin /etc/saguin/clients.passwd && chmod 0640 /etc/saguin/clients.passwd
saguin --check-config /etc/saguin/saguin.yaml >/dev/null || fail "--check-config /etc/saguin/saguin.yaml with a user"
ok "saguin --check-config /etc/saguin/saguin.yaml (refused without a user, ok with one from mosquitto_passwd)"

# The unit, as systemd would load it (User=, the binary, the man page).
systemd-analyze verify /lib/systemd/system/saguin.service || fail "systemd-analyze verify saguin.service"
ok "systemd-analyze verify saguin.service"

# The broker starts as the saguin user on the packaged configuration (ports
# moved to free ones, so a broker already on 1883 is not in the way) and
# creates its database in /var/lib/saguin, owned by it.
run=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill -9 $pid 2>/dev/null; rm -rf "$run"' EXIT
chmod 0755 "$run"
start_as_saguin() { # config file; leaves pid set
	setpriv --reuid=saguin --regid=saguin --init-groups saguin --config "$1" >"$run/log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		grep -q 'broker started' "$run/log" && return 0
		kill -0 $pid 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
sed -e 's/0\.0\.0\.0:1883/127.0.0.1:0/' -e 's/127\.0\.0\.1:9090/127.0.0.1:0/' /etc/saguin/saguin.yaml >"$run/saguin.yaml"
chmod 0644 "$run/saguin.yaml"
start_as_saguin "$run/saguin.yaml" || { cat "$run/log" >&2; kill $pid 2>/dev/null; fail "the broker did not start as the saguin user"; }
# The Mosquitto password file admits its user, and only with its password.
addr=$(sed -n 's/.*msg=listening .*listener=tcp address=\([^ ]*\).*/\1/p' "$run/log" | head -n 1)
[ -n "$addr" ] || { cat "$run/log" >&2; fail "no tcp door in the log"; }
mosquitto_pub -h "${addr%:*}" -p "${addr##*:}" -u device-1 -P secret-1 -q 1 -t deb-check/hello -m hi ||
	fail "device-1 with its mosquitto_passwd password was not admitted"
if mosquitto_pub -h "${addr%:*}" -p "${addr##*:}" -u device-1 -P wrong -q 1 -t deb-check/hello -m hi 2>/dev/null; then
	fail "a wrong password was admitted"
fi
expect /var/lib/saguin/saguin.db saguin:saguin 600
kill -TERM $pid
wait $pid || fail "the broker did not stop cleanly on SIGTERM: $(cat "$run/log")"
pid=
ok "started as saguin; device-1 admitted with its password, refused with a wrong one; /var/lib/saguin/saguin.db saguin:saguin 0600; stopped on SIGTERM"

# remove: binary and unit gone; the (edited) conffile, the users, the data stay.
echo "# edited by deb-check" >>/etc/saguin/saguin.yaml
dpkg -r saguin >/dev/null || fail "dpkg -r saguin"
[ ! -e /usr/bin/saguin ] || fail "/usr/bin/saguin left after remove"
[ ! -e /lib/systemd/system/saguin.service ] || fail "the unit left after remove"
grep -q '# edited by deb-check' /etc/saguin/saguin.yaml || fail "the edited conffile was not kept on remove"
grep -q '^device-1:' /etc/saguin/clients.passwd || fail "the password file was not kept on remove"
[ -e /var/lib/saguin/saguin.db ] || fail "the data was not kept on remove"
ok "dpkg -r: binary and unit gone, edited conffile, password file and data kept"

# purge: configuration and data gone; the user stays (Debian's rule).
dpkg -P saguin >/dev/null || fail "dpkg -P saguin"
for p in /etc/saguin/saguin.yaml /etc/saguin/clients.passwd /var/lib/saguin /etc/saguin; do
	[ ! -e "$p" ] || fail "$p left after purge"
done
ok "dpkg -P: /etc/saguin and /var/lib/saguin gone"
