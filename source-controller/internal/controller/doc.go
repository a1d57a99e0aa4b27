// Package controller holds the reconcilers of source-controller.
package controller
