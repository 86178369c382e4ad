#!/bin/sh
# Joins this machine to a Makina relay:
#   sh install.sh [--relay-url URL] --server HOST:PORT --machine-id mach_… --token mk_mach_… [--ca-sha256 HEX | --tls]
#                 [--source DIR] [--no-service] [--config-dir DIR] [--hf-token hf_…]
# Before installing anything it checks the OS and CPU, Node.js 20.19 or newer, 1 GiB free in $HOME, and with
# --relay-url (the install command passes it) that the relay answers and accepts this machine's token.
# Installs the `makina` command (from --source: a Makina checkout or release tarball; default: the
# checkout this script lives in), writes the agent config (mode 0600; in /etc/makina as root, else
# ~/.config/makina, or --config-dir) and starts the agent as a systemd service when systemd is there,
# or tells you the command to run otherwise. --ca-sha256: the fingerprint of the relay's own link CA, the only
# CA the agent will trust (from the install command); --tls: the relay has a publicly trusted certificate.
# --hf-token: a Hugging Face token for gated models.
set -eu

server="" machine_id="" token="" source_dir="" service=1 config_dir="" hf_token="" ca_sha256="" tls=0 relay_url=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server="$2"; shift 2 ;;
    --machine-id) machine_id="$2"; shift 2 ;;
    --token) token="$2"; shift 2 ;;
    --source) source_dir="$2"; shift 2 ;;
    --no-service) service=0; shift ;;
    --config-dir) config_dir="$2"; shift 2 ;;
    --hf-token) hf_token="$2"; shift 2 ;;
    --ca-sha256) ca_sha256="$2"; shift 2 ;;
    --tls) tls=1; shift ;;
    --relay-url) relay_url="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$server" ] || [ -z "$machine_id" ] || [ -z "$token" ]; then echo "install.sh: --server, --machine-id and --token are required" >&2; exit 2; fi
case "$machine_id" in mach_*) ;; *) echo "install.sh: the machine ID starts with mach_" >&2; exit 2 ;; esac
case "$token" in mk_mach_*) ;; *) echo "install.sh: the machine token starts with mk_mach_" >&2; exit 2 ;; esac
# The values go into JSON as they are: only the characters they are made of are accepted.
case "$server$machine_id$token$hf_token" in *[!A-Za-z0-9_.:\[\]-]*) echo "install.sh: --server, --machine-id, --token and --hf-token hold only letters, digits and . : _ - [ ]" >&2; exit 2 ;; esac
case "$hf_token" in ""|hf_*) ;; *) echo "install.sh: a Hugging Face token starts with hf_" >&2; exit 2 ;; esac
case "$ca_sha256" in "") ;; *[!0-9a-fA-F]*) echo "install.sh: --ca-sha256 is a SHA-256 fingerprint: 64 hex digits" >&2; exit 2 ;; *) [ "${#ca_sha256}" -eq 64 ] || { echo "install.sh: --ca-sha256 is a SHA-256 fingerprint: 64 hex digits" >&2; exit 2; } ;; esac

case "$relay_url" in ""|http://*|https://*) ;; *) echo "install.sh: --relay-url is the relay's http(s) URL" >&2; exit 2 ;; esac
case "$relay_url" in *[!A-Za-z0-9_.:/\[\]-]*) echo "install.sh: --relay-url holds only letters, digits and . : / _ - [ ]" >&2; exit 2 ;; esac

# Checks before anything is installed: each failure says what is wrong in one line and exits 1.
fail() { echo "install.sh: $*" >&2; exit 1; }
case "$(uname -s)" in Linux|Darwin) ;; *) fail "this machine runs $(uname -s); the Makina agent runs on Linux and macOS" ;; esac
case "$(uname -m)" in x86_64|amd64|aarch64|arm64) ;; *) fail "this machine's CPU is $(uname -m); the Makina agent runs on x86_64 and arm64" ;; esac
command -v node >/dev/null 2>&1 || fail "Node.js 20.19 or newer is required: install it (https://nodejs.org, or your package manager's nodejs), then run this command again"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
  fail "Node.js 20.19 or newer is required, this machine has $(node --version): update it (https://nodejs.org), then run this command again"
free_kib="$(df -Pk "${HOME:-/}" 2>/dev/null | awk 'NR == 2 { print $4 }')"
if [ -n "$free_kib" ] && [ "$free_kib" -lt 1048576 ]; then fail "the agent and its models need at least 1 GiB free in ${HOME:-/}; $((free_kib / 1024)) MiB are free"; fi
if [ -n "$relay_url" ]; then
  command -v curl >/dev/null 2>&1 || fail "curl is needed to reach the relay at $relay_url"
  curl -fsS --max-time 10 "$relay_url/health" >/dev/null 2>&1 || fail "the relay at $relay_url does not answer: check the address, that the relay runs, and the firewall"
  # The token goes on stdin, never in curl's arguments (which other users can see in ps).
  answer="$(printf '{"machine_id":"%s","token":"%s"}' "$machine_id" "$token" |
    curl -sS --max-time 10 -H 'content-type: application/json' --data-binary @- -w '\n%{http_code}' "$relay_url/agent/v1/check")" ||
    fail "the relay at $relay_url does not answer"
  if [ "$(printf '%s\n' "$answer" | tail -n 1)" != 200 ]; then
    message="$(printf '%s\n' "$answer" | sed '$d' | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try { process.stdout.write(JSON.parse(s).error.message); } catch { process.stdout.write(s.slice(0, 200)); } })')"
    fail "the relay refused this machine: $message Nothing was installed."
  fi
fi

if [ -z "$source_dir" ]; then source_dir="$(cd "$(dirname "$0")/.." && pwd)"; fi
if ! command -v makina >/dev/null 2>&1; then
  echo "Installing makina from $source_dir …"
  npm install --global "$source_dir"
fi

if [ -z "$config_dir" ]; then
  if [ "$(id -u)" = 0 ]; then config_dir=/etc/makina; else config_dir="${XDG_CONFIG_HOME:-$HOME/.config}/makina"; fi
fi
mkdir -p "$config_dir"
config_dir="$(cd "$config_dir" && pwd)"
umask 077
extra=""
if [ -n "$hf_token" ]; then extra="$extra, \"hf_token\": \"$hf_token\""; fi
if [ -n "$ca_sha256" ]; then extra="$extra, \"ca_sha256\": \"$ca_sha256\""; fi
if [ "$tls" = 1 ]; then extra="$extra, \"tls\": true"; fi
cat > "$config_dir/agent.json" <<JSON
{ "server": "$server", "machine_id": "$machine_id", "token": "$token"$extra }
JSON
chmod 600 "$config_dir/agent.json"
echo "Wrote $config_dir/agent.json"

makina_bin="$(command -v makina)"
if [ "$service" = 1 ] && command -v systemctl >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  cat > /etc/systemd/system/makina-agent.service <<UNIT
[Unit]
Description=Makina agent
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=$makina_bin agent --config $config_dir/agent.json
Restart=always
RestartSec=2
KillMode=control-group

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now makina-agent.service
  echo "The agent runs as the systemd service makina-agent; the machine shows online within seconds."
else
  echo "Start the agent with:  $makina_bin agent --config $config_dir/agent.json"
fi
