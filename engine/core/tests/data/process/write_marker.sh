#!/bin/sh
# Writes the file named by $1, so a test can tell whether this script really ran.
echo ran > "$1"
echo "marker written"
