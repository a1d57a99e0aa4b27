package notifier

import notificationv1 "plumb.dev/api/notification/v1"

// busKinds are the cloud message buses: the event's JSON published on a
// Google Pub/Sub topic (pubsub.go) or sent to an Azure Event Hub
// (eventhub.go), for other systems to consume, as the nats type does on
// a NATS subject. Their address is the service's own form, not a URL.
var busKinds = map[string]kind{
	notificationv1.GooglePubSubProvider:  {build: newGooglePubSub, token: googleKeyToken, ownAddress: true},
	notificationv1.AzureEventHubProvider: {build: newAzureEventHub, ownAddress: true},
}
