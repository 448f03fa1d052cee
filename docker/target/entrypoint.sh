#!/bin/sh
# Starts the demo target's sshd. The keys live in the shared volume $DEMO_KEYS (/demo-keys), made on the first
# start:
#   id_ed25519                  the key benchweb logs in with (read by the web service, uid 1000)
#   host/ssh_host_ed25519_key   this host's key (root only), kept across container re-creation
#   ssh_host_ed25519_key.pub    its public half, which benchweb pins from the file (no trust on first use)
# TARGET_USER, TARGET_PORT and TARGET_LISTEN change the account, port and address (the test suite runs this
# script without Docker on a loopback port).
set -eu
KEYS=${DEMO_KEYS:-/demo-keys}
USER_NAME=${TARGET_USER:-bench}
HOME_DIR=$(getent passwd "$USER_NAME" | cut -d: -f6)
[ -n "$HOME_DIR" ] || { echo "benchweb-target: no account $USER_NAME" >&2; exit 1; }
mkdir -p "$KEYS/host" /run/sshd
chmod 0700 "$KEYS/host"
[ -f "$KEYS/host/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N "" -C demo-target -f "$KEYS/host/ssh_host_ed25519_key"
[ -f "$KEYS/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C benchweb-demo -f "$KEYS/id_ed25519"
chown 1000 "$KEYS/id_ed25519"
chmod 0400 "$KEYS/id_ed25519"
install -d -o "$USER_NAME" -m 0700 "$HOME_DIR/.ssh" "$HOME_DIR/runs" "$HOME_DIR/target"
install -o "$USER_NAME" -m 0600 "$KEYS/id_ed25519.pub" "$HOME_DIR/.ssh/authorized_keys"
cp "$KEYS/host/ssh_host_ed25519_key.pub" "$KEYS/ssh_host_ed25519_key.pub"
exec /usr/sbin/sshd -D -e -h "$KEYS/host/ssh_host_ed25519_key" -p "${TARGET_PORT:-22}" \
    -o "ListenAddress ${TARGET_LISTEN:-0.0.0.0}" -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
    -o PermitRootLogin=no -o "AllowUsers $USER_NAME"
