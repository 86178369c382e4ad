#!/bin/sh
# Makina install script: joins this machine to a Makina relay. The relay serves it, and its Machines page (or
# `makina admin machine create`) prints the one line to paste:
#
#   curl -fsSLk --pinnedpubkey sha256//PIN https://RELAY:8083/install.sh | sh -s -- \
#     --relay-url https://RELAY:8083 --pinned-pubkey sha256//PIN --server HOST:PORT --machine-id mach_… --ca-sha256 HEX
#
# and it asks for the machine's token on the terminal, without echoing it: the token is in neither the shell's
# history nor the arguments that `ps` shows. Without a terminal (automation), it comes from MAKINA_MACHINE_TOKEN
# or --token-file FILE. Everything this script fetches from the relay, and the token it sends, goes over TLS to
# the key pinned in the command (curl refuses any other before sending a byte). A plain-HTTP relay URL beyond loopback is refused: the token
# would cross the network in the clear.
#
# Before it installs anything it checks the OS and CPU, Node.js 20.19 or newer with npm, free disk, and that the
# relay answers and accepts this machine's token. Then it downloads the agent package of the relay's version
# from the relay (its dependencies come from the npm registry), installs it into a prefix, writes the agent's
# config (readable only by the service's user), starts the agent as a service and waits for `makina doctor`
# to pass: the machine is online when the script ends. Running it again upgrades in place and keeps the config.
#
# Options:
#   --relay-url URL       the relay's install URL (the checks and the agent package come from it); http://
#                         only on loopback
#   --pinned-pubkey PIN   sha256//BASE64: the key the relay's install listener must present (from the command)
#   --server HOST:PORT    the relay's link address, which the agent dials (repeated: every relay on one
#                         database, which the agent fails over between)
#   --machine-id ID       this machine's id; its token is asked for on the terminal, or comes from
#                         MAKINA_MACHINE_TOKEN, or --token-file FILE (or --token TOKEN, which other users can
#                         read in `ps` while this runs)
#   --ca-sha256 HEX       trust only the relay's own link CA, with this fingerprint (from the install command)
#   --tls                 the link has a publicly trusted certificate instead
#   --hf-token hf_…       a Hugging Face token for gated models
#   --prefix DIR          where to install [default: /opt/makina as root, else ~/.local/share/makina]
#   --service MODE        auto, systemd, launchd, detached (a background process with a pid file) or none
#                         [default: auto: systemd as root where it runs, launchd on macOS, else detached]
#   --no-service          the same as --service none
#   --source FILE         install this agent package (dist/install/makina-agent-*.tgz of a build) instead of
#                         the relay's
#   --uninstall           stop the agent and remove it; downloaded models stay unless --purge
#   --purge               with --uninstall: remove the models and the service user too
set -eu

# Asks for the machine token on the terminal (this script's stdin is the script itself, piped from curl), not
# echoed, so it lands in no shell history; nothing when there is no terminal.
ask_token() {
  (: < /dev/tty) 2>/dev/null || return 0
  # Echo off before the question: a token pasted the moment it shows is not echoed either.
  tty_was="$(stty -g < /dev/tty 2>/dev/null || true)"
  trap 'if [ -n "$tty_was" ]; then stty "$tty_was" < /dev/tty 2>/dev/null; fi; printf "\n" > /dev/tty; exit 130' INT TERM
  stty -echo < /dev/tty 2>/dev/null || true
  printf 'Machine token for %s (shown once when it was added; not echoed): ' "$machine_id" > /dev/tty
  IFS= read -r token < /dev/tty || token=""
  if [ -n "$tty_was" ]; then stty "$tty_was" < /dev/tty 2>/dev/null || true; fi
  trap - INT TERM
  printf '\n' > /dev/tty
  token="$(printf '%s' "$token" | tr -d '\r\n ')"
}

# Everything runs from main, called on the last line: a download cut short runs nothing.
main() {
  relay_url="" server="" machine_id="" token="${MAKINA_MACHINE_TOKEN:-}" token_file="" token_arg=0 ca_sha256="" tls=0 hf_token="" prefix="" service=auto source=""
  pin=""
  uninstall=0 purge=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --relay-url|--server|--machine-id|--token|--token-file|--pinned-pubkey|--ca-sha256|--hf-token|--prefix|--service|--source)
        [ $# -ge 2 ] || { echo "install.sh: $1 needs a value" >&2; exit 2; }
        case "$1" in
          --relay-url) relay_url="$2" ;; --server) server="${server:+$server,}$2" ;; --machine-id) machine_id="$2" ;; --token) token="$2"; token_arg=1 ;;
          --token-file) token_file="$2" ;; --pinned-pubkey) pin="$2" ;;
          --ca-sha256) ca_sha256="$2" ;; --hf-token) hf_token="$2" ;; --prefix) prefix="$2" ;; --service) service="$2" ;;
          --source) source="$2" ;;
        esac
        shift 2 ;;
      --tls) tls=1; shift ;;
      --no-service) service=none; shift ;;
      --uninstall) uninstall=1; shift ;;
      --purge) purge=1; shift ;;
      -h|--help) echo "Usage: curl -fsSLk --pinnedpubkey PIN https://RELAY/install.sh | MAKINA_MACHINE_TOKEN=TOKEN sh -s -- --relay-url URL [--pinned-pubkey PIN] --server HOST:PORT --machine-id ID [--token-file FILE] [--ca-sha256 HEX | --tls] [--prefix DIR] [--service auto|systemd|launchd|detached|none] [--source FILE] [--hf-token hf_…]; or --uninstall [--purge] [--prefix DIR]"; exit 0 ;;
      *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
  done

  usage_error() { echo "install.sh: $*" >&2; exit 2; }
  fail() { echo "install.sh: $*" >&2; exit 1; }
  is_root() { [ "$(id -u)" = 0 ]; }

  case "$service" in auto|systemd|launchd|detached|none) ;; *) usage_error "--service is auto, systemd, launchd, detached or none" ;; esac
  if [ -z "$prefix" ]; then
    if is_root; then prefix=/opt/makina; else prefix="${XDG_DATA_HOME:-${HOME:?}/.local/share}/makina"; fi
  fi
  case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
  case "$prefix" in *[!A-Za-z0-9_.@/+-]*) usage_error "--prefix holds only letters, digits and _ . @ / + -" ;; /) usage_error "--prefix cannot be /" ;; esac
  prefix="${prefix%/}"
  # MAKINA_SYSTEMD_UNIT_DIR is for the test that runs this script against a stand-in for systemd.
  unit="${MAKINA_SYSTEMD_UNIT_DIR:-/etc/systemd/system}/makina-agent.service"
  if is_root; then plist=/Library/LaunchDaemons/dev.makina.agent.plist; else plist="${HOME:-/}/Library/LaunchAgents/dev.makina.agent.plist"; fi

  # ---- Stopping whatever runs the agent now (for upgrades and --uninstall) ----
  # The service mode the last install chose is kept in $prefix/etc/service.
  installed_mode() { if [ -f "$prefix/etc/service" ]; then cat "$prefix/etc/service"; else echo none; fi; }
  pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
  stop_detached() {
    pidfile="$prefix/run/agent.pid"
    [ -f "$pidfile" ] || return 0
    pid="$(cat "$pidfile")"
    case "$pid" in ''|*[!0-9]*) rm -f "$pidfile"; return 0 ;; esac
    # Only a process started from this prefix is ours to stop (a stale pid may be someone else's by now).
    if pid_alive "$pid" && { [ ! -r "/proc/$pid/cmdline" ] || tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "$prefix/"; }; then
      kill -TERM "$pid" 2>/dev/null || true
      # The agent drains its requests in flight first (30 s at most by default).
      waited=0
      while pid_alive "$pid" && [ "$waited" -lt 40 ]; do sleep 1; waited=$((waited + 1)); done
      if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$pidfile"
  }
  stop_service() {
    case "$(installed_mode)" in
      systemd) if command -v systemctl >/dev/null 2>&1; then systemctl disable --now makina-agent.service >/dev/null 2>&1 || true; fi; rm -f "$unit"
        if command -v systemctl >/dev/null 2>&1; then systemctl daemon-reload || true; fi ;;
      launchd) launchctl unload "$plist" >/dev/null 2>&1 || true; rm -f "$plist" ;;
      detached) stop_detached ;;
    esac
  }

  if [ "$uninstall" = 1 ]; then
    [ -d "$prefix" ] || fail "nothing is installed in $prefix (pass the --prefix it was installed with)"
    # A prefix with the install in it, or (for --purge after an --uninstall) with only the models left.
    [ -f "$prefix/etc/service" ] || [ -d "$prefix/lib" ] || { [ "$purge" = 1 ] && [ "$(ls -A "$prefix")" = data ]; } ||
      fail "$prefix does not hold a Makina install"
    stop_service
    if [ -L /usr/local/bin/makina ] && [ "$(readlink /usr/local/bin/makina)" = "$prefix/bin/makina" ]; then rm -f /usr/local/bin/makina; fi
    rm -rf "${prefix:?}/bin" "${prefix:?}/lib" "${prefix:?}/lib.new" "${prefix:?}/lib.old" "${prefix:?}/etc" "${prefix:?}/run" "${prefix:?}/log"
    rm -f "${prefix:?}"/makina-agent-*.tgz.partial
    if [ "$purge" = 1 ]; then
      rm -rf "$prefix"
      if is_root && id makina >/dev/null 2>&1 && command -v userdel >/dev/null 2>&1; then userdel makina 2>/dev/null || true; fi
      echo "Makina is uninstalled from $prefix, models included."
    else
      rmdir "$prefix" 2>/dev/null || true
      if [ -d "$prefix/data" ]; then echo "Makina is uninstalled from $prefix; downloaded models are kept in $prefix/data (--purge removes them)."
      else echo "Makina is uninstalled from $prefix."; fi
    fi
    exit 0
  fi
  [ "$purge" = 0 ] || usage_error "--purge goes with --uninstall"

  # ---- The command line ----
  if [ -n "$token_file" ]; then
    [ -r "$token_file" ] || usage_error "cannot read the token file $token_file"
    token="$(head -n 1 "$token_file" | tr -d '\r\n ')"
  fi
  if [ -z "$token" ] && [ -n "$machine_id" ]; then ask_token; fi
  if [ -z "$server" ] || [ -z "$machine_id" ] || [ -z "$token" ]; then usage_error "--server and --machine-id are required, and the machine token: typed when asked on a terminal, or in MAKINA_MACHINE_TOKEN (or --token-file FILE)"; fi
  if [ "$token_arg" = 1 ]; then echo "install.sh: --token shows the machine token to every user of this machine in ps; pass it in MAKINA_MACHINE_TOKEN or --token-file next time" >&2; fi
  case "$machine_id" in mach_*) ;; *) usage_error "the machine ID starts with mach_" ;; esac
  case "$token" in mk_mach_*) ;; *) usage_error "the machine token starts with mk_mach_" ;; esac
  # The values go into JSON and URLs as they are: only the characters they are made of are accepted.
  case "$machine_id$token$hf_token" in *[!A-Za-z0-9_.:\[\]-]*) usage_error "--server, --machine-id, --token and --hf-token hold only letters, digits and . : _ - [ ]" ;; esac
  # The addresses of several --server are joined by commas.
  case "$server" in *[!A-Za-z0-9_.:,\[\]-]*) usage_error "--server, --machine-id, --token and --hf-token hold only letters, digits and . : _ - [ ]" ;; esac
  case "$hf_token" in ""|hf_*) ;; *) usage_error "a Hugging Face token starts with hf_" ;; esac
  case "$ca_sha256" in "") ;; *[!0-9a-fA-F]*) usage_error "--ca-sha256 is a SHA-256 fingerprint: 64 hex digits" ;; *) [ "${#ca_sha256}" -eq 64 ] || usage_error "--ca-sha256 is a SHA-256 fingerprint: 64 hex digits" ;; esac
  case "$relay_url" in ""|http://*|https://*) ;; *) usage_error "--relay-url is the relay's http(s) URL" ;; esac
  case "$relay_url" in *[!A-Za-z0-9_.:/\[\]-]*) usage_error "--relay-url holds only letters, digits and . : / _ - [ ]" ;; esac
  # Every request to the relay: with the pinned key, curl takes the relay's own CA (-k) but no other key.
  relay_curl() { if [ -n "$pin" ]; then curl -k --pinnedpubkey "$pin" "$@"; else curl "$@"; fi; }
  relay_url="${relay_url%/}"
  case "$pin" in "") ;; sha256//*) pin_b64="${pin#sha256//}"
      case "$pin_b64" in *[!A-Za-z0-9+/=]*) usage_error "--pinned-pubkey is sha256// and 44 base64 characters" ;; esac
      [ "${#pin_b64}" -eq 44 ] || usage_error "--pinned-pubkey is sha256// and 44 base64 characters" ;;
    *) usage_error "--pinned-pubkey is sha256// and 44 base64 characters" ;; esac
  # The token never crosses a network in the clear: plain HTTP only to this machine itself.
  case "$relay_url" in
    http://127.*|http://localhost|http://localhost:*|http://\[::1\]*|https://*|"") ;;
    http://*) fail "the relay URL $relay_url is plain HTTP on the network: this machine's token would cross it in the clear. Use the install command the relay prints (https, with the relay's key pinned), or give the relay TLS. Nothing was sent." ;;
  esac
  if [ -n "$pin" ]; then case "$relay_url" in https://*) ;; *) usage_error "--pinned-pubkey goes with an https:// --relay-url" ;; esac; fi
  if [ -z "$relay_url" ] && [ -z "$source" ]; then usage_error "--relay-url (the agent package comes from the relay) or --source is required"; fi
  if [ -n "$source" ] && [ ! -f "$source" ]; then usage_error "--source $source is not a file (an agent package, makina-agent-*.tgz)"; fi

  # ---- Checks before anything is installed: each failure says what is wrong in one line and exits 1 ----
  os="$(uname -s)"
  case "$os" in Linux|Darwin) ;; *) fail "this machine runs $os; the Makina agent runs on Linux and macOS" ;; esac
  case "$(uname -m)" in x86_64|amd64|aarch64|arm64) ;; *) fail "this machine's CPU is $(uname -m); the Makina agent runs on x86_64 and arm64" ;; esac
  command -v node >/dev/null 2>&1 || fail "Node.js 20.19 or newer is required: install it (https://nodejs.org, or your package manager's nodejs), then run this command again"
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
    fail "Node.js 20.19 or newer is required, this machine has $(node --version): update it (https://nodejs.org), then run this command again"
  command -v npm >/dev/null 2>&1 || fail "npm is required (it comes with Node.js; some distributions package it apart as npm)"
  if [ "$service" = systemd ] && { ! is_root || ! command -v systemctl >/dev/null 2>&1; }; then fail "--service systemd needs root and systemd"; fi
  if [ "$service" = launchd ] && [ "$os" != Darwin ]; then fail "--service launchd is for macOS"; fi
  # The agent package with llama.cpp's prebuilt binaries takes about 1 GiB; models need more, later.
  existing="$prefix"
  while [ ! -d "$existing" ]; do existing="$(dirname "$existing")"; done
  [ -w "$existing" ] || fail "$existing is not writable: run as root, or pass --prefix DIR in a directory you own"
  free_kib="$(df -Pk "$existing" 2>/dev/null | awk 'NR == 2 { print $4 }')"
  if [ -n "$free_kib" ] && [ "$free_kib" -lt 2097152 ]; then fail "the agent needs at least 2 GiB free in $existing; $((free_kib / 1024)) MiB are free"; fi
  package_url="" package_sha256="" package_file=""
  if [ -n "$relay_url" ]; then
    command -v curl >/dev/null 2>&1 || fail "curl is needed to reach the relay at $relay_url"
    health=0
    relay_curl -fsS --max-time 10 "$relay_url/health" >/dev/null 2>&1 || health=$?
    if [ "$health" = 90 ]; then fail "the relay at $relay_url does not present the key pinned in the install command: it is not the relay that printed it (or its certificate changed). Nothing was sent to it; get a new install command from the relay."; fi
    [ "$health" = 0 ] || fail "the relay at $relay_url does not answer: check the address, that the relay runs, and the firewall"
    # The token goes on stdin, never in curl's arguments (which other users can see in ps).
    answer="$(printf '{"machine_id":"%s","token":"%s"}' "$machine_id" "$token" |
      relay_curl -sS --max-time 10 -H 'content-type: application/json' --data-binary @- -w '\n%{http_code}' "$relay_url/agent/v1/check")" ||
      fail "the relay at $relay_url does not answer"
    status="$(printf '%s\n' "$answer" | tail -n 1)"
    body="$(printf '%s\n' "$answer" | sed '$d')"
    if [ "$status" != 200 ]; then
      message="$(printf '%s' "$body" | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try { process.stdout.write(JSON.parse(s).error.message); } catch { process.stdout.write(s.slice(0, 200)); } })')"
      fail "the relay refused this machine: $message Nothing was installed."
    fi
    if [ -z "$source" ]; then
      # Where the agent package of the relay's version is, and its SHA-256: "url sha256 file", or nothing.
      package="$(printf '%s' "$body" | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const p = JSON.parse(s).agent_package; if (p && /^makina-agent-[\w.-]+\.tgz$/.test(p.file) && p.url === "/install/" + p.file && /^[0-9a-f]{64}$/.test(p.sha256)) process.stdout.write(p.url + " " + p.sha256 + " " + p.file); })')"
      [ -n "$package" ] || fail "the relay at $relay_url has no agent package to serve (it was not built: npm run build); pass --source to install from elsewhere"
      package_url="$relay_url${package%% *}"
      package_file="${package##* }"
      package_sha256="${package#* }"; package_sha256="${package_sha256%% *}"
    fi
  fi

  # ---- Install ----
  if [ "$service" = auto ]; then
    if [ "$os" = Darwin ]; then service=launchd
    elif is_root && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then service=systemd
    else service=detached; fi
  fi
  node_bin="$(command -v node)"
  service_user=""
  if [ "$service" = systemd ]; then
    # The agent runs as its own unprivileged user, in the GPU groups where the machine has them.
    service_user=makina
    if ! id makina >/dev/null 2>&1; then
      useradd --system --home-dir "$prefix/data" --no-create-home --shell /usr/sbin/nologin makina 2>/dev/null ||
        adduser --system --home "$prefix/data" --no-create-home --shell /usr/sbin/nologin makina >/dev/null ||
        fail "cannot create the service user makina"
    fi
    for group in video render; do
      if getent group "$group" >/dev/null 2>&1; then usermod -a -G "$group" makina 2>/dev/null || true; fi
    done
  fi

  umask 022
  mkdir -p "$prefix/bin" "$prefix/lib" "$prefix/etc" "$prefix/data" "$prefix/run" "$prefix/log"
  chmod 700 "$prefix/etc" "$prefix/data"
  if [ -n "$service_user" ]; then
    # The service writes only its data, run and log directories; its config stays root's, readable by its group.
    chown "$service_user" "$prefix/data" "$prefix/run" "$prefix/log"
    chown "root:$service_user" "$prefix/etc"
    chmod 750 "$prefix/etc"
  fi

  # The agent package, unpacked into $prefix/lib as an npm project of its own, and its dependencies installed
  # with `npm ci` from the npm-shrinkwrap.json it carries: exactly the tree the relay was tested with, each
  # tarball checked against its integrity hash. No dependency's install script runs but node-llama-cpp's (it
  # checks its prebuilt llama.cpp binaries), and as root npm runs as the service's user: nothing fetched from
  # the registry ever runs as root. It is built beside the installed one and takes its place only once
  # complete, and the code is root's again afterwards, so the running service cannot change it.
  as_builder() {
    if [ -z "$service_user" ]; then "$@"; return; fi
    HOME="$prefix/lib.new/.build-home" npm_config_cache="$prefix/lib.new/.build-home/npm" runuser -u "$service_user" -- "$@"
  }
  # A failed install leaves the installed agent as it was, and nothing of the new one.
  discard_new() {
    rm -rf "$prefix/lib.new"
    if [ -n "$package_url" ]; then rm -f "$prefix/$package_file.partial"; fi
  }
  installed_sha="$(cat "$prefix/lib/installed.sha256" 2>/dev/null || true)"
  package_path=""
  if [ -n "$package_url" ]; then
    if [ "$installed_sha" = "$package_sha256" ] && [ -f "$prefix/lib/dist/cli/main.js" ]; then
      echo "The agent package ${package_file%.tgz} is installed already."
    else
      echo "Downloading ${package_file%.tgz} from $relay_url …"
      relay_curl -fsSL --max-time 300 "$package_url" -o "$prefix/$package_file.partial" || { discard_new; fail "cannot download the agent package from $package_url"; }
      got="$(node -e 'const h = require("node:crypto").createHash("sha256"); require("node:fs").createReadStream(process.argv[1]).on("data", (d) => h.update(d)).on("end", () => process.stdout.write(h.digest("hex")))' "$prefix/$package_file.partial")"
      if [ "$got" != "$package_sha256" ]; then rm -f "$prefix/$package_file.partial"; fail "the agent package from $relay_url is damaged (its SHA-256 is $got, the relay announced $package_sha256)"; fi
      package_path="$prefix/$package_file.partial"
    fi
  else
    package_path="$source"
  fi
  if [ -n "$package_path" ]; then
    if [ -n "$service_user" ]; then command -v runuser >/dev/null 2>&1 || { discard_new; fail "runuser (util-linux) is needed to run npm as $service_user rather than root"; }; fi
    echo "Installing the agent and its dependencies into $prefix/lib (from the npm registry, as its lockfile pins them) …"
    rm -rf "$prefix/lib.new"
    mkdir -p "$prefix/lib.new"
    tar -xzf "$package_path" -C "$prefix/lib.new" --strip-components=1 package || { discard_new; fail "$package_path is not an agent package (a makina-agent-*.tgz)"; }
    [ -f "$prefix/lib.new/npm-shrinkwrap.json" ] || { discard_new; fail "$package_path carries no npm-shrinkwrap.json: it is not an agent package this script installs"; }
    if [ -n "$service_user" ]; then
      mkdir -p "$prefix/lib.new/.build-home"
      chown -R "$service_user" "$prefix/lib.new"
    fi
    (cd "$prefix/lib.new" && as_builder npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error &&
      as_builder npm rebuild --loglevel=error node-llama-cpp) || { discard_new; fail "npm could not install the agent package (see npm's messages above); nothing else was changed"; }
    rm -rf "$prefix/lib.new/.build-home"
    if [ -n "$service_user" ]; then chown -R root:root "$prefix/lib.new"; fi
    if [ -n "$package_sha256" ]; then echo "$package_sha256" > "$prefix/lib.new/installed.sha256"; fi
    if [ -n "$package_url" ]; then rm -f "$prefix/$package_file.partial"; fi
    # The new tree in place of the old. The old one stays (lib.old) until the agent has restarted on the new one
    # below: a running agent still loads files from it (llama.cpp's binaries, when a model loads).
    rm -rf "$prefix/lib.old"
    if [ -d "$prefix/lib" ]; then mv "$prefix/lib" "$prefix/lib.old"; fi
    mv "$prefix/lib.new" "$prefix/lib"
  fi
  entry="$prefix/lib/dist/cli/main.js"
  [ -e "$entry" ] || fail "the installed package has no makina command ($entry)"

  cat > "$prefix/bin/makina" <<WRAPPER
#!/bin/sh
# Written by the Makina install script: the agent installed in $prefix, with its config.
MAKINA_AGENT_CONFIG="\${MAKINA_AGENT_CONFIG:-$prefix/etc/agent.json}"
export MAKINA_AGENT_CONFIG
exec "$node_bin" "$entry" "\$@"
WRAPPER
  chmod 755 "$prefix/bin/makina"
  if [ "$prefix" = /opt/makina ] && is_root && [ -d /usr/local/bin ] && { [ ! -e /usr/local/bin/makina ] || [ "$(readlink /usr/local/bin/makina 2>/dev/null)" = "$prefix/bin/makina" ]; }; then
    ln -sf "$prefix/bin/makina" /usr/local/bin/makina
  fi

  # The config: the values of this command, over what the file already holds (a re-run keeps other settings).
  config="$prefix/etc/agent.json"
  MK_SERVER="$server" MK_MACHINE_ID="$machine_id" MK_TOKEN="$token" MK_CA_SHA256="$ca_sha256" MK_TLS="$tls" MK_HF_TOKEN="$hf_token" \
    MK_DATA_DIR="$prefix/data" node -e '
      const fs = require("node:fs");
      const file = process.argv[1], e = process.env;
      let c = {};
      try { c = JSON.parse(fs.readFileSync(file, "utf8")); } catch {}
      Object.assign(c, { server: e.MK_SERVER, machine_id: e.MK_MACHINE_ID, token: e.MK_TOKEN });
      delete c.ca_sha256; delete c.tls;
      if (e.MK_CA_SHA256) c.ca_sha256 = e.MK_CA_SHA256.toLowerCase();
      if (e.MK_TLS === "1") c.tls = true;
      if (e.MK_HF_TOKEN) c.hf_token = e.MK_HF_TOKEN;
      c.data_dir ??= e.MK_DATA_DIR;
      fs.writeFileSync(file + ".new", JSON.stringify(c, null, 2) + "\n", { mode: 0o600 });
      fs.renameSync(file + ".new", file);
    ' "$config"
  chmod 600 "$config"
  if [ -n "$service_user" ]; then chown "root:$service_user" "$config"; chmod 640 "$config"; fi
  echo "Wrote $config"

  # ---- The service ----
  previous="$(installed_mode)"
  if [ "$previous" != "$service" ]; then stop_service; fi
  echo "$service" > "$prefix/etc/service"
  case "$service" in
    systemd)
      cat > "$unit" <<UNIT
[Unit]
Description=Makina agent
After=network-online.target
Wants=network-online.target

[Service]
User=$service_user
Environment=MAKINA_AGENT_CONFIG=$config
ExecStart=$prefix/bin/makina agent
Restart=on-failure
RestartSec=2
KillMode=mixed
TimeoutStopSec=45
NoNewPrivileges=true
ProtectSystem=strict
ProtectHome=true
PrivateTmp=true
ReadWritePaths=$prefix/data $prefix/run $prefix/log

[Install]
WantedBy=multi-user.target
UNIT
      systemctl daemon-reload
      systemctl enable makina-agent.service >/dev/null 2>&1
      systemctl restart makina-agent.service
      echo "The agent runs as the systemd service makina-agent (journalctl -u makina-agent for its log)." ;;
    launchd)
      cat > "$plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.makina.agent</string>
  <key>ProgramArguments</key><array><string>$prefix/bin/makina</string><string>agent</string></array>
  <key>EnvironmentVariables</key><dict><key>MAKINA_AGENT_CONFIG</key><string>$config</string></dict>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>StandardOutPath</key><string>$prefix/log/agent.log</string>
  <key>StandardErrorPath</key><string>$prefix/log/agent.log</string>
</dict>
</plist>
PLIST
      launchctl unload "$plist" >/dev/null 2>&1 || true
      launchctl load -w "$plist"
      echo "The agent runs as the launchd job dev.makina.agent (log: $prefix/log/agent.log)." ;;
    detached)
      stop_detached
      # A process of its own session, with no terminal: it outlives this script and the shell it ran in.
      starter=""
      if command -v setsid >/dev/null 2>&1; then starter=setsid; fi
      $starter nohup "$prefix/bin/makina" agent </dev/null >>"$prefix/log/agent.log" 2>&1 &
      echo "$!" > "$prefix/run/agent.pid"
      echo "The agent runs in the background as process $(cat "$prefix/run/agent.pid") (pid file: $prefix/run/agent.pid, log: $prefix/log/agent.log). Nothing restarts it if it stops: run this command again." ;;
    none)
      rm -rf "$prefix/lib.old"
      echo "Start the agent with:  $prefix/bin/makina agent"
      exit 0 ;;
  esac
  # The agent runs on the new tree now: the old one can go.
  rm -rf "$prefix/lib.old"

  # ---- Done when the agent is linked to the relay ----
  if "$prefix/bin/makina" doctor --wait 30; then
    echo "This machine is online: its stacks can be deployed from the relay. Uninstall with the same script and --uninstall --prefix $prefix."
  else
    fail "the agent did not come up cleanly (see makina doctor above, and the agent's log); run this command again once it is fixed"
  fi
}

main "$@"
