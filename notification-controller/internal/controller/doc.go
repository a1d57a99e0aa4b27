// Package controller holds the reconcilers of notification-controller.
package controller
