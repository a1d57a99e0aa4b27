// Package artifact stores, packs and serves the files that Plumb's
// controllers hand to each other.
//
// # Storage
//
// A Storage is a folder (--storage-path) holding one folder per object:
//
//	<kind>/<namespace>/<name>/<file>
//
// e.g. gitrepository/apps/podinfo/<commit>.tar.gz written by
// source-controller, or kustomization/apps/podinfo/<digest>.yaml written by
// render-controller. <kind> is the lower-case Kind. Every write goes to a
// temporary file in the object's folder and is renamed into place once it is
// complete and synced to the disk, so a reader never sees a half-written
// artifact; the sha256 digest and the size are computed while writing.
// A Rebuilt storage (render-controller's) skips the sync: its files can be
// made again and every reader verifies them, so a file a crash of the
// machine left short is noticed and written again. Temporary files start
// with ".tmp-" and are never served.
//
// Retention keeps the newest N files of an object's folder (by modification
// time; the current artifact is always kept) and deletes the others; Remove
// deletes the whole folder when the object is deleted. List names the
// objects of a kind that have a folder, reading a bounded number of
// entries (render-controller sweeps the folders of Kustomizations deleted
// while it was down with it). Verify re-hashes a
// stored file and compares it with the digest in status, so a tampered or
// truncated artifact is noticed and rebuilt.
//
// # HTTP server
//
// Handler serves the storage folder read-only: files only (a folder gives
// 404, there are no listings), GET and HEAD, byte ranges (Range/If-Range)
// and Last-Modified validators. Server runs that handler as a
// controller-runtime Runnable. Artifact URLs are
// http://<advertised address>/<path>, where the advertised address is
// --storage-adv-addr (e.g. the Service name).
//
// The server runs on the leader only (NeedLeaderElection): the leader is
// the replica that writes the storage. Ready is a readiness check that
// passes only while the server serves (pkg/app.AddArtifactServer adds it to
// /readyz), so a Service sends downloads to the leader alone. net/http
// recovers a handler's panic and closes that connection.
//
// A client of the server may be anything that reaches its port, so Server
// bounds what each connection can hold. Options of NewServer, flags of
// pkg/options' Storage:
//
//	--storage-read-header-timeout  10s  request line and headers (slowloris)
//	--storage-read-timeout         30s  the whole request
//	--storage-write-timeout        5m   the whole response: 100 MiB, the
//	                                    largest artifact, at 350 KiB/s
//	--storage-idle-timeout         60s  a keep-alive connection between requests
//	--storage-max-connections      256  connections served at once (idle ones
//	                                    count); more wait to be accepted
//
// A timed-out connection is closed without a reply. The cap uses
// golang.org/x/net/netutil.LimitListener: a connection beyond it completes
// its TCP handshake in the kernel's accept queue and is served when another
// one closes. The reasons for each default are on its constant.
//
// # Packing
//
// Pack writes a deterministic tar.gz of a folder: entries in lexical walk
// order, regular files only (symbolic links, devices and empty folders are
// left out, so an extractor only ever creates files and their parent
// folders), modification times zeroed, owners zeroed, modes normalised to
// 0644 or 0755 (executable when any execute bit is set). The same tree always
// packs to the same bytes and so to the same sha256 digest, whatever the
// checkout time, umask or user.
//
// The .git folder is never packed. Ignore rules in gitignore syntax come from
// .sourceignore files (in the root and in any sub-folder, scoped to that
// folder) and from the object's spec.ignore, which is applied last and so
// wins. Without spec.ignore, a default list also excludes Git metadata files
// (.gitignore, .gitattributes, .gitmodules) and common binary archives and
// images (*.jpg, *.jpeg, *.gif, *.png, *.wmv, *.flv, *.tar.gz, *.zip), as
// Flux's source-controller does; setting spec.ignore replaces that list.
package artifact
