package icebergtable

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const sampleMountinfo = `21 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
22 21 0:5 / /dev rw,nosuid shared:2 - devtmpfs devtmpfs rw,size=10k
30 21 8:1 / /srv/old rw - ext2 /dev/sda1 rw
31 21 0:45 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw,lowerdir=/a,upperdir=/b
32 21 259:65536 /lake /srv/lake rw master:7 propagation:x - xfs /dev/nvme0n1p1 rw
33 21 254:0 /srv /mnt/bind rw - ext4 /dev/vda rw
34 21 7:3 / /broken rw
`

func TestMountedFileSystem(t *testing.T) {
	for _, tc := range []struct {
		dev, want string
		err       bool
	}{
		{dev: "254:0", want: "ext4"},
		{dev: "8:1", want: "ext2"},
		{dev: "0:45", want: "overlay"},
		{dev: "259:65536", want: "xfs"}, // optional fields before the separator
		{dev: "9:9", err: true},         // not mounted
		{dev: "7:3", err: true},         // no separator
	} {
		a, b, _ := strings.Cut(tc.dev, ":")
		major, _ := strconv.ParseUint(a, 10, 32)
		minor, _ := strconv.ParseUint(b, 10, 32)
		got, err := mountedFileSystem([]byte(sampleMountinfo), uint32(major), uint32(minor))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("device %s: %q, %v; want %q (error %v)", tc.dev, got, err, tc.want, tc.err)
		}
	}
}

// TestDevNumbers: devMajor and devMinor undo the kernel's encoding of
// large device numbers too (minor 65536 is NVMe's second namespace).
func TestDevNumbers(t *testing.T) {
	for _, tc := range []struct{ major, minor uint32 }{{254, 0}, {8, 1}, {0, 45}, {259, 65536}, {4095, 1 << 19}} {
		dev := uint64(tc.minor&0xff) | uint64(tc.major&0xfff)<<8 | uint64(tc.minor&^0xff)<<12 | uint64(tc.major&^0xfff)<<32
		if devMajor(dev) != tc.major || devMinor(dev) != tc.minor {
			t.Errorf("%d:%d encoded as %#x decodes as %d:%d", tc.major, tc.minor, dev, devMajor(dev), devMinor(dev))
		}
	}
}

// TestDirSyncNeeded: the directory fsync is skipped only where mountinfo
// says the file's device holds ext4; anything else, or no answer, keeps
// it.
func TestDirSyncNeeded(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev)
	line := func(fsType string) string {
		return "40 1 " + fmt.Sprint(devMajor(dev)) + ":" + fmt.Sprint(devMinor(dev)) + " / " + dir + " rw - " + fsType + " /dev/x rw\n"
	}
	for _, tc := range []struct {
		name, mountinfo string
		want            bool
	}{
		{"ext4", line("ext4"), false},
		{"ext3 (another fsync)", line("ext3"), true},
		{"xfs", line("xfs"), true},
		{"overlay", line("overlay"), true},
		{"another device", strings.Replace(line("ext4"), " "+fmt.Sprint(devMajor(dev))+":", " 4000:", 1), true},
		{"no mountinfo", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDirSync()
			d.mountinfo = filepath.Join(t.TempDir(), "mountinfo")
			if tc.mountinfo != "" {
				if err := os.WriteFile(d.mountinfo, []byte(tc.mountinfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := d.needed(int(f.Fd())); got != tc.want {
				t.Errorf("needed = %v, want %v", got, tc.want)
			}
			// The answer is kept: a changed table is not read again
			// before dirSyncRecheck.
			_ = os.Remove(d.mountinfo)
			if got := d.needed(int(f.Fd())); got != tc.want {
				t.Errorf("needed the second time = %v, want %v", got, tc.want)
			}
		})
	}
	var none *dirSync
	if !none.needed(int(f.Fd())) {
		t.Error("a nil dirSync skips the directory fsync")
	}
}

// TestWriteLocalFileMakesDirectories: the first file of a table makes its
// directories, and a second file beside it neither fails nor replaces it.
func TestWriteLocalFileMakesDirectories(t *testing.T) {
	root := t.TempDir()
	name := filepath.Join(root, "ns", "t", "metadata", "00000-a.metadata.json")
	for _, dirs := range []*dirSync{nil, newDirSync()} {
		_ = os.RemoveAll(filepath.Join(root, "ns"))
		if err := writeLocalFile(name, []byte("{}"), dirs, nil); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(name); err != nil || string(b) != "{}" {
			t.Fatalf("read back %q, %v", b, err)
		}
		if err := writeLocalFile(name, []byte("[]"), dirs, nil); err == nil {
			t.Fatal("an existing file was written again")
		}
		if b, _ := os.ReadFile(name); string(b) != "{}" {
			t.Fatalf("the existing file now holds %q", b)
		}
		second := filepath.Join(filepath.Dir(name), "00001-b.metadata.json")
		if err := writeLocalFile(second, []byte("{}"), dirs, nil); err != nil {
			t.Fatal(err)
		}
	}
	made, err := mkdirAll(filepath.Join(root, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b", "c")}
	if strings.Join(made, "|") != strings.Join(want, "|") {
		t.Errorf("mkdirAll made %v, want %v", made, want)
	}
	if made, err := mkdirAll(filepath.Join(root, "a", "b")); err != nil || len(made) != 0 {
		t.Errorf("mkdirAll of an existing directory: %v, %v", made, err)
	}
}
