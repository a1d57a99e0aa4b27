package renderworker

import "syscall"

// setParentDeathSignal has the kernel kill the worker when render-controller
// exits, however it exits: a worker never outlives its parent.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
