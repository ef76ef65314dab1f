#!/usr/bin/env bash
# Installs the MRC dissector (tools/wireshark/mrc.lua) where Wireshark and tshark load Lua
# plugins for this user: ~/.local/lib/wireshark/plugins. Then `tshark -r FILE -Y mrc -V` and
# Wireshark show MRC headers field by field. Without installing:
#   tshark -X lua_script:tools/wireshark/mrc.lua -r FILE -Y mrc -V
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$HOME/.local/lib/wireshark/plugins
mkdir -p "$dir"
cp tools/wireshark/mrc.lua "$dir/mrc.lua"
echo "installed $dir/mrc.lua"
