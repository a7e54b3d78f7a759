# Sourced by the GPU session scripts: bubblewrap from the .deb files carried in .deb/ where the lent
# machine has none (`apt-get download bubblewrap libcap2 libselinux1 libpcre2-8-0` on a Debian host).
if ! command -v bwrap >/dev/null 2>&1; then
  mkdir -p /tmp/bwrap && for deb in .deb/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" /tmp/bwrap; done
  export PATH=/tmp/bwrap/usr/bin:$PATH
  bwrap --version >/dev/null 2>&1 || export LD_LIBRARY_PATH=/tmp/bwrap/usr/lib/x86_64-linux-gnu:/tmp/bwrap/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
