package packaging

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// ociImage is an OCI image archive read as a registry or runtime reads
// it: index.json, its one manifest, the config and the layers, each blob
// checked against its digest.
type ociImage struct {
	refName string
	config  imageConfig
	files   map[string]*layerFile // by path, without a leading slash
}

type layerFile struct {
	hdr  *tar.Header
	data []byte
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		User       string              `json:"User"`
		Env        []string            `json:"Env"`
		Entrypoint []string            `json:"Entrypoint"`
		Cmd        []string            `json:"Cmd"`
		Volumes    map[string]struct{} `json:"Volumes"`
		WorkingDir string              `json:"WorkingDir"`
		Labels     map[string]string   `json:"Labels"`
		StopSignal string              `json:"StopSignal"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

func readOCIArchive(t *testing.T, archive string) *ociImage {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[path.Clean(hdr.Name)] = b
	}
	if got := string(entries["oci-layout"]); !strings.Contains(got, `"imageLayoutVersion":"1.0.0"`) {
		t.Fatalf("oci-layout is %q", got)
	}
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}
	mustJSON(t, entries["index.json"], &index)
	if index.SchemaVersion != 2 || len(index.Manifests) != 1 {
		t.Fatalf("index.json: schemaVersion %d, %d manifests; want 2 and one", index.SchemaVersion, len(index.Manifests))
	}
	blob := func(d descriptor, mediaType string) []byte {
		t.Helper()
		if d.MediaType != mediaType {
			t.Fatalf("%s: media type %q, want %q", d.Digest, d.MediaType, mediaType)
		}
		hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
		if !ok {
			t.Fatalf("digest %q is not sha256", d.Digest)
		}
		b, ok := entries["blobs/sha256/"+hexDigest]
		if !ok {
			t.Fatalf("blob %s is missing", d.Digest)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexDigest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s does not match its digest or size", d.Digest)
		}
		return b
	}
	img := &ociImage{refName: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"], files: map[string]*layerFile{}}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	mustJSON(t, blob(index.Manifests[0], "application/vnd.oci.image.manifest.v1+json"), &manifest)
	mustJSON(t, blob(manifest.Config, "application/vnd.oci.image.config.v1+json"), &img.config)
	if len(manifest.Layers) != len(img.config.RootFS.DiffIDs) {
		t.Fatalf("%d layers, %d diff_ids", len(manifest.Layers), len(img.config.RootFS.DiffIDs))
	}
	for i, l := range manifest.Layers {
		img.readLayer(t, blob(l, "application/vnd.oci.image.layer.v1.tar+gzip"), img.config.RootFS.DiffIDs[i])
	}
	return img
}

// readLayer adds a layer's files, checking its uncompressed digest. The
// gzip command decompresses it: compress/gzip built with -race takes half
// a minute over the 46 MB layer, gzip half a second.
func (img *ociImage) readLayer(t *testing.T, gz []byte, diffID string) {
	t.Helper()
	gunzip := exec.Command("gzip", "-dc")
	gunzip.Stdin = bytes.NewReader(gz)
	zr, err := gunzip.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := gunzip.Start(); err != nil {
		t.Fatalf("gzip -dc: %v", err)
	}
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(zr, h))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if name == "" {
			continue // the root itself
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		img.files[name] = &layerFile{hdr: hdr, data: data}
	}
	io.Copy(io.Discard, zr) // the tar's padding counts in the digest
	if err := gunzip.Wait(); err != nil {
		t.Fatalf("gzip -dc of the layer: %v", err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
		t.Fatalf("layer's uncompressed digest %s, config says %s", got, diffID)
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf("%.80s", b), err)
	}
}
