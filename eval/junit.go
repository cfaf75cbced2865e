package eval

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
)

// JUnit groupings: one testsuite per scorer, or per recorded session.
const (
	ByScorer  = "scorer"
	BySession = "session"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name   string      `xml:"name,attr"`
	Tests  int         `xml:"tests,attr"`
	Fails  int         `xml:"failures,attr"`
	Errors int         `xml:"errors,attr"`
	Cases  []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the run as JUnit XML: a testsuite per scorer (by
// ByScorer) or per recorded session (BySession), a testcase per pair,
// failed when the scorer did not pass it, an error when it could not
// score it. A session that could not be run is one testcase in error.
func WriteJUnit(w io.Writer, res *Result, by string) error {
	if by != ByScorer && by != BySession {
		return fmt.Errorf("eval: junit: group by %q: one of %s, %s", by, ByScorer, BySession)
	}
	out := junitSuites{Name: "vigil eval " + res.Suite}
	idx := map[string]int{}
	suite := func(name string) *junitSuite {
		i, ok := idx[name]
		if !ok {
			i = len(out.Suites)
			idx[name] = i
			out.Suites = append(out.Suites, junitSuite{Name: name})
		}
		return &out.Suites[i]
	}
	for _, sc := range res.Summary.Scorers {
		if by == ByScorer {
			suite(sc.Scorer)
		}
	}
	for _, c := range res.Cases {
		if c.Error != "" {
			s := suite(c.Session)
			if by == ByScorer {
				s = suite("sessions")
			}
			s.Cases = append(s.Cases, junitCase{Name: c.Session, Classname: "eval.session", Error: &junitProblem{Message: c.Error, Type: "run"}})
		}
		for _, d := range c.Scores {
			jc := junitCase{Classname: "eval." + d.Scorer, Output: "score " + strconv.FormatFloat(d.Score, 'f', -1, 64) + ": " + d.Reason}
			s := suite(d.Scorer)
			jc.Name = fmt.Sprintf("%s turn %d", d.Session, d.Turn)
			if by == BySession {
				s = suite(d.Session)
				jc.Name = fmt.Sprintf("turn %d %s", d.Turn, d.Scorer)
			}
			switch {
			case d.Error != "":
				jc.Error = &junitProblem{Message: d.Error, Type: "scorer"}
			case !d.Pass:
				jc.Failure = &junitProblem{Message: d.Reason, Type: "score", Text: jc.Output}
			}
			s.Cases = append(s.Cases, jc)
		}
	}
	for i := range out.Suites {
		s := &out.Suites[i]
		s.Tests = len(s.Cases)
		for _, c := range s.Cases {
			if c.Failure != nil {
				s.Fails++
			}
			if c.Error != nil {
				s.Errors++
			}
		}
		out.Tests += s.Tests
		out.Fails += s.Fails
		out.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("eval: junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
