// Package controller holds the reconcilers of notification-controller:
// Provider (its Secret and address resolve), Alert (its expressions compile
// and its Provider is ready) and Receiver (its token resolves; it writes
// status.webhookPath). Each is a short ordered list of steps; each step's
// doc comment names the conditions it sets. Status is patched with
// fluxcd/pkg/runtime's patch helper under the field manager
// "plumb-notification"; conditions follow kstatus (Ready, Reconciling,
// Stalled).
//
// A Provider or Receiver whose Secret is missing, or lacks a key, is
// Ready=False with a message naming the Secret and the key; a change to that
// Secret (watched by metadata only, values are never cached) reconciles it
// again at once. An Alert whose expressions do not compile is Stalled.
package controller
