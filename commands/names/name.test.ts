import { given } from "../testing.js";
import { uniqueName, type NameClaimed } from "./name.js";
import { claimName } from "./claim.js";
import { releaseName } from "./release.js";

const claimed: NameClaimed = { type: "NameClaimed", data: { scope: "username", name: "ada", holder: "u_1", at: 1 } };

describe("commands/names", () => {
  it("claims a free name", () => {
    given(uniqueName).when(claimName, claimed.data).then([claimed]);
  });
  it("a second claim by the holder changes nothing", () => {
    given(uniqueName, claimed).when(claimName, { ...claimed.data, at: 2 }).then([]);
  });
  it("refuses a name held by another", () => {
    given(uniqueName, claimed).when(claimName, { ...claimed.data, holder: "u_2" }).thenRejected("name_taken", 409);
  });
  it("a released name can be claimed again", () => {
    const released = { type: "NameReleased" as const, data: { ...claimed.data, at: 3 } };
    given(uniqueName, claimed, released).when(claimName, { ...claimed.data, holder: "u_2", at: 4 })
      .then([{ type: "NameClaimed", data: { ...claimed.data, holder: "u_2", at: 4 } }]);
  });
  it("only the holder releases", () => {
    given(uniqueName, claimed).when(releaseName, { ...claimed.data, holder: "u_2" }).then([]);
  });
});
