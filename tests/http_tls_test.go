package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcp-sqlite-memory test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}

// TestHTTPTLS: --tls-cert/--tls-key serve HTTPS; an MCP client that
// trusts the certificate works, plain HTTP on the port does not.
func TestHTTPTLS(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	cert, key, pool := selfSigned(t, filepath.Dir(db))
	h := startHTTP(t, db, []string{"alice"}, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(h.url, "https://") {
		t.Fatalf("serving %s, want https", h.url)
	}
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	tr, err := transport.NewStreamableHTTP(h.url, transport.WithHTTPBasicClient(httpc),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.token["alice"]}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-tls", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, c: c, db: db}
	if got := s.ok("read_query", q("SELECT 'over TLS' AS x")); got != "x\nover TLS\n# 1 rows" {
		t.Fatalf("over TLS: %q", got)
	}
	resp, err := http.Get("http://" + h.addr + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered on the TLS port")
		}
	}
}
