#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the e2e tests (playwright-core
# drives it through executablePath). Installs it with apt-get when missing, as root or with sudo
# that asks no password (never a prompt: jest's globalSetup runs this too, see
# test/setup/global-setup.ts); never downloads a browser any other way (no `npx playwright install`).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: /usr/bin/chromium is missing and apt-get is not available; install Chromium from your distribution" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then SUDO="sudo -n"; else
    echo "ensure-chromium: installing chromium with apt-get needs root or sudo without a password prompt" >&2
    exit 1
  fi
fi
echo "ensure-chromium: installing Debian's chromium with apt-get"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
if [ ! -x /usr/bin/chromium ]; then
  echo "ensure-chromium: apt-get finished but /usr/bin/chromium is still missing" >&2
  exit 1
fi
/usr/bin/chromium --version || true
