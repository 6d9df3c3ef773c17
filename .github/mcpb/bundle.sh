#!/usr/bin/env bash
# Builds one Claude Desktop extension (.mcpb) for one platform from a
# release binary: .github/mcpb/manifest.json with the release's version
# and that one platform, the binary under server/, validated and packed by
# the official mcpb CLI.
#
#   .github/mcpb/bundle.sh BINARY PLATFORM VERSION OUTPUT.mcpb
#
# PLATFORM is darwin, linux or win32 (Node's process.platform, as the
# manifest spec uses). MCPB names the mcpb command (default: the pinned
# npm package through npx). Used by .github/workflows/publish-mcpb.yml and
# by tests/it/mcpb_bundle.rs.
set -euo pipefail

if [ "$#" -ne 4 ]; then
    echo "usage: $0 BINARY PLATFORM VERSION OUTPUT.mcpb" >&2
    exit 2
fi
binary=$1 platform=$2 version=$3 output=$4
here=$(cd "$(dirname "$0")" && pwd)
mcpb=${MCPB:-npx --yes @anthropic-ai/mcpb@2.1.2}

case "$platform" in
    darwin | linux) executable=mcp-project-helper ;;
    win32) executable=mcp-project-helper.exe ;;
    *)
        echo "unknown platform $platform: use darwin, linux or win32" >&2
        exit 2
        ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
cp "$binary" "$stage/server/$executable"
chmod 0755 "$stage/server/$executable"
cp "$here/../../LICENSE" "$stage/LICENSE"

# The manifest for this bundle: the release's version, its one platform,
# and the entry point that holds the binary.
node - "$here/manifest.json" "$stage/manifest.json" "$version" "$platform" "$executable" <<'JS'
const fs = require("fs");
const [from, to, version, platform, executable] = process.argv.slice(2);
const manifest = JSON.parse(fs.readFileSync(from, "utf8"));
manifest.version = version;
manifest.compatibility.platforms = [platform];
manifest.server.entry_point = `server/${executable}`;
fs.writeFileSync(to, JSON.stringify(manifest, null, 2) + "\n");
JS

$mcpb validate "$stage/manifest.json" >&2
$mcpb pack "$stage" "$output" >&2
echo "$output"
