// Node's `assert/strict`.
import assert from "assert/";

export default assert.strict;
