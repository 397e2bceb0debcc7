package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDockerfile(t *testing.T) {
	const src = `# syntax=docker/dockerfile:1
ARG GO=1.26
FROM golang:${GO} AS build
RUN echo a \
# a comment inside the continuation
 && echo b
FROM scratch
ARG VERSION=dev
ARG GO
COPY --from=build --chown=1:2 /out/a /out/b /etc/
COPY --from=build /x /y
ENV A=1 B="two words" C=${VERSION}
LABEL "k"="v ${VERSION}" k2=v\ 2
EXPOSE 8181 9000/udp
VOLUME ["/d"]
VOLUME /e /f
USER 7:8
HEALTHCHECK --interval=5s --retries=2 CMD ["/bin/x", "y"]
ENTRYPOINT ["/x"]
CMD ["serve", "--dev"]
`
	df, err := parseDockerfile(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(df.Stages) != 2 || df.Stages[0].Name != "build" || df.Stages[0].From != "golang:${GO}" || df.GlobalArgs["GO"] != "1.26" {
		t.Fatalf("stages %+v, global args %v", df.Stages, df.GlobalArgs)
	}
	if run := df.Stages[0].Instructions[0]; run.Args != "echo a  && echo b" || run.Line != 4 {
		t.Errorf("continued RUN = %q at line %d", run.Args, run.Line)
	}
	spec, err := df.finalSpec(map[string]string{"VERSION": "v1"})
	if err != nil {
		t.Fatal(err)
	}
	want := &imageSpec{
		Base: "scratch", User: "7:8", Entrypoint: []string{"/x"}, Cmd: []string{"serve", "--dev"},
		Env:          []string{"A=1", "B=two words", "C=v1"},
		ExposedPorts: []string{"8181/tcp", "9000/udp"},
		Volumes:      []string{"/d", "/e", "/f"},
		Labels:       map[string]string{"k": "v v1", "k2": "v 2"},
		Healthcheck:  &healthcheck{Test: []string{"CMD", "/bin/x", "y"}, Interval: 5 * time.Second, Timeout: 30 * time.Second, Retries: 2},
		Copies: []copyInstruction{
			{From: "build", Chown: "1:2", Srcs: []string{"/out/a", "/out/b"}, Dests: []string{"/etc/a", "/etc/b"}},
			{From: "build", Srcs: []string{"/x"}, Dests: []string{"/y"}},
		},
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("spec\n%+v\nwant\n%+v", spec, want)
	}
	if spec, _ := df.finalSpec(nil); spec.Labels["k"] != "v dev" {
		t.Errorf("ARG default not applied: %v", spec.Labels)
	}

	for _, bad := range []string{
		"FROM scratch\nENTRYPOINT /x serve\n",               // shell form needs a shell
		"FROM scratch\nHEALTHCHECK CMD-SHELL curl -f x\n",   // so does CMD-SHELL
		"FROM scratch\nLABEL v=${NOPE}\n",                   // unknown ARG
		"FROM scratch\nENV A 1\n",                           // legacy form
		"FROM scratch\nCOPY a b /etc\n",                     // several sources, no dir
		"FROM scratch\nONBUILD RUN x\n",                     // not read
		"FROM scratch\nRUN a \\\n",                          // dangling continuation
		"RUN x\nFROM scratch\n",                             // before FROM
		"FROM scratch\nHEALTHCHECK --bogus=1 CMD [\"x\"]\n", // unknown flag
	} {
		df, err := parseDockerfile(strings.NewReader(bad))
		if err == nil {
			_, err = df.finalSpec(nil)
		}
		if err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
