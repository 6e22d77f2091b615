import { given } from "../testing.js";
import { uniqueName, type NameClaimed } from "./name.js";

const claimed: NameClaimed = { type: "NameClaimed", data: { scope: "username", name: "ada", holder: "u_1", at: 1 } };
const claim = (data: Partial<NameClaimed["data"] & { holderExists: boolean }> = {}) => ({
  type: "ClaimName" as const,
  data: { ...claimed.data, ...data },
});
const release = (data: Partial<NameClaimed["data"]> = {}) => ({ type: "ReleaseName" as const, data: { ...claimed.data, ...data } });

describe("commands/names", () => {
  it("claims a free name", () => {
    given(uniqueName).when(claim()).then([claimed]);
  });
  it("a second claim by the holder changes nothing", () => {
    given(uniqueName, claimed)
      .when(claim({ at: 2 }))
      .then([]);
  });
  it("refuses a name held by another", () => {
    given(uniqueName, claimed)
      .when(claim({ holder: "u_2" }))
      .thenRejected("name_taken");
  });
  it("a released name can be claimed again", () => {
    const released = { type: "NameReleased" as const, data: { ...claimed.data, at: 3 } };
    given(uniqueName, claimed, released)
      .when(claim({ holder: "u_2", at: 4 }))
      .then([{ type: "NameClaimed", data: { ...claimed.data, holder: "u_2", at: 4 } }]);
  });
  it("only the holder releases", () => {
    given(uniqueName, claimed)
      .when(release({ holder: "u_2" }))
      .then([]);
    given(uniqueName, claimed)
      .when(release({ at: 5 }))
      .then([{ type: "NameReleased", data: { ...claimed.data, at: 5 } }]);
  });
  it("takes over a claim whose holder never came into being (a crash between claim and create), once it is a minute old", () => {
    given(uniqueName, claimed)
      .when(claim({ holder: "u_2", holderExists: false, at: 30 }))
      .thenRejected("name_taken");
    given(uniqueName, claimed)
      .when(claim({ holder: "u_2", holderExists: true, at: 100 }))
      .thenRejected("name_taken");
    given(uniqueName, claimed)
      .when(claim({ holder: "u_2", holderExists: false, at: 61 }))
      .then([
        { type: "NameReleased", data: { scope: "username", name: "ada", holder: "u_1", at: 61 } },
        { type: "NameClaimed", data: { scope: "username", name: "ada", holder: "u_2", at: 61 } },
      ]);
  });
});
