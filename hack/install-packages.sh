#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the tests need, and does nothing when
# they are installed:
#   podman, runc  the tests that run KRM functions as images
#                 (KRM_FN_RUNTIME=podman kpt fn eval --image ...); run podman
#                 with CONTAINERS_CONF=hack/containers.conf (see that file)
#   strace        TestFunctionModeTouchesNoFiles (make test-slow)
#   chromium      TestHTMLPagesInChromium (make e2e): the -o html pages in a
#                 real, headless browser
#   git           TestFlux serves the split with git http-backend
#   prometheus, prometheus-pushgateway
#                 TestRolloutGates (make e2e): a real Prometheus scraping a
#                 pushgateway per cluster, which promotion gates query
set -euo pipefail

packages=(podman runc strace chromium git prometheus prometheus-pushgateway)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "${packages[*]}: already installed"
	exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when apt cannot find a candidate.
for p in "${missing[@]}"; do
	if ! apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		"${sudo[@]}" apt-get update
		break
	fi
done
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
