import { expect } from "chai";
import { readHttpRequest } from "./httpRequestProp.js";

describe("http_request values (readHttpRequest)", () => {
  it("reads Pipedream's form: rows with names (disabled and empty ones skipped), a raw body, basic auth", () => {
    const { config, problems } = readHttpRequest({
      url: " https://api.example.com/v1/items ",
      method: "patch",
      headers: [
        { name: "X-One", value: 1 },
        { name: "X-Off", value: "no", disabled: true },
        { name: "", value: "" },
      ],
      params: [{ name: "q", value: true }],
      body: { contentType: "text/plain", type: "raw", mode: "raw", raw: "hello" },
      auth: { type: "basic", username: "u" },
    });
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({
      method: "PATCH",
      url: "https://api.example.com/v1/items",
      headers: { "X-One": "1", "Content-Type": "text/plain" },
      params: { q: "true" },
      data: "hello",
      auth: { username: "u", password: "" },
    });
  });

  it("GET carries no body; contentType none sends none; a header set by hand wins over the body's type and the bearer token", () => {
    const get = readHttpRequest({ url: "http://h/x", body: { contentType: "application/json", raw: "{}" } });
    expect(get.config).to.deep.equal({ method: "GET", url: "http://h/x", headers: {}, params: {} });
    const none = readHttpRequest({ url: "http://h/x", method: "POST", body: { contentType: "none", raw: "ignored" } });
    expect(none.config).to.deep.equal({ method: "POST", url: "http://h/x", headers: {}, params: {} });
    const own = readHttpRequest({
      url: "http://h/x",
      method: "POST",
      headers: { "content-type": "application/vnd.api+json", authorization: "Token abc" },
      body: { contentType: "application/json", raw: "{}" },
      auth: { type: "bearer", token: "t" },
    });
    expect(own.config?.headers).to.deep.equal({ "content-type": "application/vnd.api+json", authorization: "Token abc" });
  });

  it("auth without a type: a token is bearer, a username basic; none sends nothing", () => {
    expect(readHttpRequest({ url: "http://h", auth: { token: "t" } }).config?.headers).to.deep.equal({ Authorization: "Bearer t" });
    expect(readHttpRequest({ url: "http://h", auth: { username: "a", password: "b" } }).config?.auth).to.deep.equal({
      username: "a",
      password: "b",
    });
    expect(readHttpRequest({ url: "http://h", auth: { type: "none" } }).config).to.deep.equal({
      method: "GET",
      url: "http://h",
      headers: {},
      params: {},
    });
  });

  it("lists every problem with its path", () => {
    expect(readHttpRequest(null).problems).to.deep.equal([
      { path: "", message: "must be an object with url (and method, headers, params, body, auth)" },
    ]);
    expect(
      readHttpRequest({
        url: "example.com",
        headers: "X-A: 1",
        params: [{ name: "a", value: { deep: 1 } }, "b"],
        body: { mode: "multipart" },
        auth: { type: "bearer", token: "" },
      }).problems,
    ).to.deep.equal([
      { path: ".url", message: "must be an http or https URL" },
      { path: ".headers", message: "must be an array of {name, value} or an object of names to values" },
      { path: ".params[0].value", message: "must be a string, number or boolean" },
      { path: ".params[1]", message: "must be an object with name and value" },
      { path: ".body.mode", message: 'must be "raw" or "fields"' },
      { path: ".auth.token", message: "must be a non-empty string" },
    ]);
    expect(readHttpRequest({ url: "http://h", headers: { "X-A": "a\r\nX-B: b" } }).problems).to.deep.equal([
      { path: ".headers.X-A.value", message: "must not contain CR, LF or NUL" },
    ]);
  });
});
