package server_test

import (
	"os"
	"testing"

	"plumb.dev/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.WithoutNATS()))
}
