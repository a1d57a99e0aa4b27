// Package controller holds the reconcilers of render-controller.
package controller
