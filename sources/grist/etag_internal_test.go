package grist

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCursorETagsRoundTrip(t *testing.T) {
	c := cursorState{Full: 1795988466, Schema: "0123456789abcdef", Config: "fedcba9876543210",
		ETags: map[string]string{
			metaProbe:                  `W/"3aa-m/8jdoWw7NilvqEs+oIKR0/0PTA"`,
			recordsProbe("Guides"):     `W/"2d04-YiArYzc3+iXm/MK/zv5GTxbjeOI"`,
			recordsProbe("Odd name/é"): `W/"4-K+iMpCQsduglOsYkdIUQZQMtaDM"`,
		}}
	var back cursorState
	require.NoError(t, json.Unmarshal([]byte(c.String()), &back))
	require.Equal(t, c, back)
	require.Equal(t, "/tables/Odd%20name%2F%C3%A9/records?sort=id", recordsProbe("Odd name/é"))
}

func TestOldCursorParses(t *testing.T) {
	// The format before ETags: h, full, schema.
	var c cursorState
	require.NoError(t, json.Unmarshal([]byte(`{"h":"abc","full":12,"schema":"s"}`), &c))
	require.Equal(t, cursorState{Hash: "abc", Full: 12, Schema: "s"}, c)
	// A cursor without tags writes the old format: older readers parse it.
	require.JSONEq(t, `{"h":"abc","full":12,"schema":"s"}`, c.String())
}

func TestProbeOrderSchemaFirst(t *testing.T) {
	tags := map[string]string{recordsProbe("B"): "1", metaProbe: "2", recordsProbe("A"): "3"}
	require.Equal(t, []string{metaProbe, recordsProbe("A"), recordsProbe("B")}, probeOrder(tags))
}
