// Package controller holds the reconcilers of sync-controller.
package controller
