package localenv

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"plumb.dev/pkg/imagebuild"
)

// The sample's image automation (DemoOptions.ImageAutomation): the
// objects of DemoImageObjectsFile scan the example web image in the
// launcher's Registry, pick its highest semver tag, and commit it, signed,
// where the Deployment's marker asks; a registry Receiver scans at once.

// DemoImageObjectsFile holds the sample's ImageRepository, ImagePolicy,
// ImageUpdateAutomation and registry Receiver.
const DemoImageObjectsFile = "deploy/examples/plumb/image-demo.yaml"

// The sample's image automation objects' names, in Demo.Namespace.
const (
	DemoImageName      = "web" // the ImageRepository and the ImagePolicy
	DemoAutomationName = "demo"
	DemoRegistryHook   = "registry" // the Receiver
	// DemoBotName and DemoBotEmail are the automation's commit author.
	DemoBotName  = "plumb-bot"
	DemoBotEmail = "plumb-bot@plumb.dev"
	// demoMarkerNamespace is the namespace the sample's markers name,
	// replaced by the demo's own.
	demoMarkerNamespace = "plumb-system"
)

// demoAutomation is what DeployDemo adds for DemoOptions.ImageAutomation.
type demoAutomation struct {
	// WebImage is the example web image's repository in the Registry,
	// without a tag: the ImageRepository's spec.image.
	WebImage string
	// RegistryWebhookURL is the registry Receiver's URL and
	// RegistryWebhookToken its token.
	RegistryWebhookURL   string
	RegistryWebhookToken string
	// SigningKey signs the automation's commits: its public half checks
	// them.
	SigningKey *openpgp.Entity
}

// markedWebImage is the sample's web image where a marker follows it:
// the field the automation writes.
var markedWebImage = regexp.MustCompile(`(?m)^(\s+image: )` + regexp.QuoteMeta(imagebuild.ExampleImage("", DemoImageName)) + `(:[^\s#]+\s+# \{"\$imagepolicy")`)

// pointDemoMarkers makes the app's image policy markers name the
// ImagePolicy of the demo's namespace, and, with a registry, writes the
// web image's name in it at the marked field, as the ImagePolicy will
// (its full-reference setter writes name and tag): the automation's
// first run then finds nothing to change, and a new tag is a change of
// the tag alone. The images: entry of PointDemoImages still points the
// hook image.
func pointDemoMarkers(files map[string]string, namespace, registry string) {
	for name, content := range files {
		content = strings.ReplaceAll(content, `{"$imagepolicy": "`+demoMarkerNamespace+`:`, `{"$imagepolicy": "`+namespace+`:`)
		if registry != "" {
			content = markedWebImage.ReplaceAllString(content, "${1}"+imagebuild.ExampleImage(registry, DemoImageName)+"${2}")
		}
		files[name] = content
	}
}

// prepareImageAutomation makes the signing key and the Receiver's token
// and returns the variables of DemoImageObjectsFile.
func (e *Env) prepareImageAutomation(d *Demo) (map[string]string, error) {
	if e.Registry == nil {
		return nil, errors.New("the sample's image automation needs the launcher's registry: start with Options.Registry or a real node")
	}
	key, err := openpgp.NewEntity(DemoBotName, "the sample's image automation", DemoBotEmail, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return nil, err
	}
	armored, err := armorPrivateKey(key)
	if err != nil {
		return nil, err
	}
	d.WebImage = imagebuild.ExampleImage(e.Registry.Addr, DemoImageName)
	d.RegistryWebhookToken = randomToken()
	d.SigningKey = key
	return map[string]string{
		"WEB_IMAGE":              d.WebImage,
		"REGISTRY_WEBHOOK_TOKEN": d.RegistryWebhookToken,
		// Indented for the block scalar of the Secret's git.asc.
		"SIGNING_KEY": strings.ReplaceAll(strings.TrimSpace(armored), "\n", "\n    "),
	}, nil
}

// armorPrivateKey is key's private key, unencrypted, in ASCII armor, as a
// Secret's git.asc holds it.
func armorPrivateKey(key *openpgp.Entity) (string, error) {
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		return "", err
	}
	if err := key.SerializePrivate(w, nil); err != nil {
		return "", fmt.Errorf("the signing key: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// randomToken is 16 random bytes in hex.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
