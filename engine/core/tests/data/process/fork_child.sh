#!/bin/sh
# Forks a child that sleeps for five minutes, prints its pid, and waits for it: the test
# times this out and checks that the child died with the group.
sleep 300 &
echo "child $!"
wait
