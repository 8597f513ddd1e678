#!/bin/sh
# Renders the nginx.conf template (placeholders __NAME__) and runs nginx in the
# foreground from its own prefix folder, logging to the container's stdout/stderr.
set -eu

: "${API_UPSTREAM:=api:3000}"
: "${ORTHANC_UPSTREAM:=orthanc:8042}"
: "${LISTEN_PORT:=80}"
# Orthanc's read-only viewer account (GET /dicom-web/ only), never the service's.
: "${ORTHANC_VIEWER_USERNAME:=viewer}"
: "${ORTHANC_VIEWER_PASSWORD:?ORTHANC_VIEWER_PASSWORD must be set}"
: "${NGINX_TEMPLATE:=/etc/pacs-nginx/nginx.conf.template}"
: "${NGINX_PREFIX:=/var/cache/nginx/pacs}"
# The OHIF viewer's static build (viewer/dist, made by `node viewer/install.js`).
: "${VIEWER_ROOT:=/usr/share/pacs-viewer}"

ORTHANC_AUTH=$(printf '%s:%s' "$ORTHANC_VIEWER_USERNAME" "$ORTHANC_VIEWER_PASSWORD" | base64 | tr -d '\n')

mkdir -p "$NGINX_PREFIX/logs"
ln -sf /dev/stdout "$NGINX_PREFIX/logs/access.log"
ln -sf /dev/stderr "$NGINX_PREFIX/logs/error.log"

# "|" never occurs in host:port values nor in base64.
sed -e "s|__API_UPSTREAM__|$API_UPSTREAM|g" \
    -e "s|__ORTHANC_UPSTREAM__|$ORTHANC_UPSTREAM|g" \
    -e "s|__LISTEN_PORT__|$LISTEN_PORT|g" \
    -e "s|__ORTHANC_AUTH__|$ORTHANC_AUTH|g" \
    -e "s|__VIEWER_ROOT__|$VIEWER_ROOT|g" \
    "$NGINX_TEMPLATE" > "$NGINX_PREFIX/nginx.conf"

if [ ! -f "$VIEWER_ROOT/index.html" ]; then
  echo "entrypoint: no viewer in $VIEWER_ROOT (run \`node viewer/install.js\` before \`docker compose up\`)" >&2
fi

if grep -q '__[A-Z_]*__' "$NGINX_PREFIX/nginx.conf"; then
  echo "entrypoint: placeholder left in nginx.conf" >&2
  exit 1
fi

nginx -t -q -p "$NGINX_PREFIX/" -c "$NGINX_PREFIX/nginx.conf"
exec nginx -p "$NGINX_PREFIX/" -c "$NGINX_PREFIX/nginx.conf" -g 'daemon off;'
