
#version 330
uniform sampler2D u_tex;
uniform vec2 u_rcp;  // 1 / size
out vec4 f_color;
const vec3 LUMA = vec3(0.299, 0.587, 0.114);
void main() {
    vec2 uv = gl_FragCoord.xy * u_rcp;
    ivec2 p = ivec2(gl_FragCoord.xy);
    ivec2 hi = textureSize(u_tex, 0) - 1;
    vec3 nw = texelFetch(u_tex, max(p - 1, ivec2(0)), 0).rgb;
    vec3 ne = texelFetch(u_tex, clamp(p + ivec2(1, -1), ivec2(0), hi), 0).rgb;
    vec3 sw = texelFetch(u_tex, clamp(p + ivec2(-1, 1), ivec2(0), hi), 0).rgb;
    vec3 se = texelFetch(u_tex, min(p + 1, hi), 0).rgb;
    vec3 m = texelFetch(u_tex, p, 0).rgb;
    float lnw = dot(nw, LUMA), lne = dot(ne, LUMA), lsw = dot(sw, LUMA), lse = dot(se, LUMA);
    float lm = dot(m, LUMA);
    float lmin = min(lm, min(min(lnw, lne), min(lsw, lse)));
    float lmax = max(lm, max(max(lnw, lne), max(lsw, lse)));
    if (lmax - lmin < max(0.04, lmax * 0.1)) { f_color = vec4(m, 1.0); return; }
    vec2 dir = vec2(-((lnw + lne) - (lsw + lse)), (lnw + lsw) - (lne + lse));
    float reduce = max((lnw + lne + lsw + lse) * 0.03125, 1.0 / 128.0);
    float rcp_min = 1.0 / (min(abs(dir.x), abs(dir.y)) + reduce);
    dir = clamp(dir * rcp_min, vec2(-4.0), vec2(4.0)) * u_rcp;
    vec3 a = 0.5 * (texture(u_tex, uv + dir * (1.0 / 3.0 - 0.5)).rgb +
                    texture(u_tex, uv + dir * (2.0 / 3.0 - 0.5)).rgb);
    vec3 b = a * 0.5 + 0.25 * (texture(u_tex, uv - dir * 0.5).rgb +
                               texture(u_tex, uv + dir * 0.5).rgb);
    float lb = dot(b, LUMA);
    f_color = vec4((lb < lmin || lb > lmax) ? a : b, 1.0);
}
