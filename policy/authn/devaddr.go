package authn

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// CheckDevAddr refuses a listen address that dev mode must not use. Dev
// mode lets anyone without a token in, so only this machine may reach the
// server: the host must be "localhost", an address in 127.0.0.0/8 or ::1.
// An empty host (":8181"), 0.0.0.0, :: and every other address or name
// listen beyond the machine (a hostname may resolve anywhere).
func CheckDevAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dev mode: listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if host == "" {
		return fmt.Errorf("dev mode admits requests without a token, so it must listen on loopback only; %q listens on every interface: use 127.0.0.1%s", addr, addr)
	}
	ip, err := netip.ParseAddr(host)
	if err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("dev mode admits requests without a token, so it must listen on loopback only (localhost, 127.0.0.0/8 or ::1), not on %q", host)
}
