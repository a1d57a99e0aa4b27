//go:build !linux

package renderworker

import "syscall"

// setParentDeathSignal does nothing outside Linux: a worker there ends
// when its request pipe closes, which the parent's exit does.
func setParentDeathSignal(*syscall.SysProcAttr) {}
