package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"plumb.dev/pkg/events"
)

// matrixLimit bounds each of body and formatted_body, well inside the
// 65536 bytes of a Matrix event.
const matrixLimit = 24000

func matrixKind(cfg Config) (Notifier, error) {
	if cfg.Token == "" {
		return nil, errors.New(`a matrix provider needs an access token in the key "token" of spec.secretRef`)
	}
	// Room IDs start with "!" (and hold no server name since room
	// version 12); an alias would have to be resolved first.
	if len(cfg.Channel) < 2 || cfg.Channel[0] != '!' {
		return nil, errors.New("a matrix provider needs spec.channel, the room ID (!opaque:example.org; an alias like #room:example.org does not do)")
	}
	return &matrix{cfg: cfg}, nil
}

// matrix sends an m.room.message to a room through the client-server
// API of the homeserver at the address.
type matrix struct{ cfg Config }

type matrixMessage struct {
	MsgType       string `json:"msgtype"`
	Body          string `json:"body"`
	Format        string `json:"format"`
	FormattedBody string `json:"formatted_body"`
	// Mentions is empty: the message mentions no one, so "@room" or a
	// user's name in an event's text (a commit message, an object's
	// name) does not notify the room or the user (Matrix's intentional
	// mentions).
	Mentions struct{} `json:"m.mentions"`
}

func (n *matrix) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	lines := alertLines(e)
	msg := matrixMessage{
		MsgType:       "m.notice", // sent by a bot: clients and bots do not answer notices
		Body:          plainText.render(lines, matrixLimit),
		Format:        "org.matrix.custom.html",
		FormattedBody: htmlText.render(lines, matrixLimit),
	}
	path := "/_matrix/client/v3/rooms/" + url.PathEscape(n.cfg.Channel) + "/send/m.room.message/" + matrixTxnID(e)
	a, err := n.cfg.do(ctx, request{
		method: http.MethodPut, url: strings.TrimSuffix(n.cfg.Address, "/") + path, payload: msg,
		contentType: "application/json",
		header:      bearerAuth(n.cfg.Token),
	})
	if err != nil {
		return err
	}
	if a.ok() {
		return nil
	}
	// Errors carry a code of the spec's vocabulary (M_FORBIDDEN,
	// M_UNKNOWN_TOKEN, M_LIMIT_EXCEEDED with 429).
	var ans struct {
		ErrCode string `json:"errcode"`
	}
	_ = json.Unmarshal(a.body, &ans)
	return statusError(n.cfg.Type, a, serviceCode(ans.ErrCode), retryable(a.code))
}

// matrixTxnID names the message for the homeserver, which takes a request
// with a transaction ID it has seen from this token once only: a retry of
// the same event is not posted twice. The ID is the event's, hashed with
// what is sent (two Alerts may send one event, with different summaries).
func matrixTxnID(e events.Event) string {
	sum := sha256.Sum256([]byte(e.ID + "\x00" + events.Fingerprint(&e)))
	return "plumb-" + hex.EncodeToString(sum[:16])
}
